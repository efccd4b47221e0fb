/* A target for usdt cases, with SystemTap SDT notes written by hand (no
 * sys/sdt.h here): probe bpfscope_test:tick(i, total) at every step and
 * bpfscope_test:gated(i) behind a semaphore, fired only while a tracer has it
 * enabled. Prints "gated N" (how often it fired) at the end.
 * usage: usdt_target N [STEP_MS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The kernel counts attached probes in a semaphore (uprobe ref_ctr_offset);
 * sys/sdt.h puts semaphores in the .probes section. */
__attribute__((used, section(".probes"))) volatile unsigned short bpfscope_test_gated_semaphore;

/* One .note.stapsdt entry for a probe at this point: the probe address, the
 * .stapsdt.base address, the semaphore address (or 0), then provider, name and
 * argument specs ("SIZE@OPERAND", operands filled in by the compiler). */
#define USDT_PROBE(provider, name, semaphore, args, ...)                           \
  __asm__ __volatile__("990: nop\n"                                                \
                       ".pushsection .note.stapsdt,\"?\",\"note\"\n"               \
                       ".balign 4\n"                                               \
                       ".4byte 992f-991f, 994f-993f, 3\n"                          \
                       "991: .asciz \"stapsdt\"\n"                                 \
                       "992: .balign 4\n"                                          \
                       "993: .8byte 990b\n"                                        \
                       ".8byte _.stapsdt.base\n"                                   \
                       ".8byte " semaphore "\n"                                    \
                       ".asciz \"" provider "\"\n"                                 \
                       ".asciz \"" name "\"\n"                                     \
                       ".asciz \"" args "\"\n"                                     \
                       "994: .balign 4\n"                                          \
                       ".popsection\n"                                             \
                       ".ifndef _.stapsdt.base\n"                                  \
                       ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
                       ".weak _.stapsdt.base\n"                                    \
                       ".hidden _.stapsdt.base\n"                                  \
                       "_.stapsdt.base: .space 1\n"                                \
                       ".size _.stapsdt.base, 1\n"                                 \
                       ".popsection\n"                                             \
                       ".endif\n" ::__VA_ARGS__)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1;
  long step_ms = argc > 2 ? atol(argv[2]) : 0;
  long total = 0;
  int gated = 0;
  for (int i = 0; i < n; i++) {
    total += i;
    USDT_PROBE("bpfscope_test", "tick", "0", "-4@%0 8@%1", "r"(i), "r"(total));
    if (bpfscope_test_gated_semaphore) {
      USDT_PROBE("bpfscope_test", "gated", "bpfscope_test_gated_semaphore", "-4@%0", "r"(i));
      gated++;
    }
    if (step_ms > 0) {
      struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  printf("gated %d\n", gated);
  return 0;
}
