# The Debian package: `cpack -G DEB` in the build directory writes
# bpfscope_VERSION_ARCH.deb, installed under /usr. Its dependencies are what
# dpkg-shlibdeps finds the installed binary and HTTP module load (a release
# build links libbpf, libelf, zlib, fmt and protobuf-lite in statically:
# libc6, and libmicrohttpd12 for the module; a -DBPFSCOPE_STATIC_DEPS=OFF
# build depends on libbpf1, libelf1, zlib1g, libfmt9 ... as well). No LLVM.
set(CPACK_PACKAGE_NAME bpfscope)
set(CPACK_PACKAGE_VENDOR "bpfscope")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "bpfscope maintainers <dev@bpfscope.example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "eBPF tracer for bpftrace programs, compiled without LLVM")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "eBPF tracer for bpftrace programs, compiled without LLVM\n"
    "bpfscope runs programs written in bpftrace's language: it compiles them\n"
    "straight to BPF bytecode, with no LLVM or clang, loads them through libbpf\n"
    "and prints what bpftrace prints. It carries packaged tools (tcplife,\n"
    "biolatency, runqlat...) with a man page each, and can serve a program's\n"
    "maps as Prometheus metrics and draw flame graphs and heat maps.")
string(REPLACE ";" "" CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# No debugging symbols in the package, and the directory modes of Debian's.
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
