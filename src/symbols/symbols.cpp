// The symbols stage; see symbols.h.
#include "symbols/symbols.h"
