// A C++ target: namespaced and overloaded functions for uprobe cpp: cases,
// and exceptions for libstdc++'s USDT probes (libstdcxx:throw, catch).
// usage: cpp_target N: calls shapes::area(int, int) and shapes::area(double)
// and throws and catches an exception, N times each.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace shapes {

__attribute__((noinline)) int area(int w, int h) {
  __asm__ volatile("" ::: "memory");
  return w * h;
}

__attribute__((noinline)) double area(double r) {
  __asm__ volatile("" ::: "memory");
  return 3 * r * r;
}

struct Box {
  int w, h;
  __attribute__((noinline)) int volume(int d) const {
    __asm__ volatile("" ::: "memory");
    return w * h * d;
  }
};

}  // namespace shapes

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1;
  long total = 0;
  int caught = 0;
  shapes::Box box{2, 3};
  for (int i = 0; i < n; i++) {
    total += shapes::area(i, 2) + static_cast<long>(shapes::area(1.0)) + box.volume(i);
    try {
      if (total >= 0) throw std::runtime_error("cpp_target");
    } catch (const std::exception&) {
      caught++;
    }
  }
  std::printf("caught %d\n", caught);
  return total < 0;
}
