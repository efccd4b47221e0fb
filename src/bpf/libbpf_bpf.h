// libbpf's <bpf/bpf.h>. With -I src, `#include <bpf/bpf.h>` finds bpfscope's
// own src/bpf/bpf.h first, so this wrapper skips to the next include
// directory. Include it as "bpf/libbpf_bpf.h" (so that it is found through the
// -I src search path, which #include_next needs).
#pragma once

#include_next <bpf/bpf.h>
#include <bpf/libbpf.h>
