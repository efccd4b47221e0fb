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
# Debian's changelog.gz beside the copyright (lintian): one entry for the
# version, dated at configure time (SOURCE_DATE_EPOCH when set).
string(TIMESTAMP changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${CMAKE_BINARY_DIR}/package/changelog
     "bpfscope (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * bpfscope ${PROJECT_VERSION}: see README.md for what works.\n\n"
     " -- ${CPACK_PACKAGE_CONTACT}  ${changelog_date}\n")
execute_process(COMMAND ${GZIP} -9nf ${CMAKE_BINARY_DIR}/package/changelog)
install(FILES ${CMAKE_BINARY_DIR}/package/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The statically linked zlib, said to lintian (packaging/lintian-overrides).
if(BPFSCOPE_STATIC_DEPS)
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      file(INSTALL \"${CMAKE_SOURCE_DIR}/packaging/lintian-overrides\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/lintian/overrides\"
           RENAME bpfscope)
    endif()")
endif()
include(CPack)
