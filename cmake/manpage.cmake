# The man page gpuclean(1): docs/man/gpuclean.1.scd -> ${CMAKE_BINARY_DIR}/man/gpuclean.1 (scdoc)
# and gpuclean.1.gz (gzip -9n: compressed and reproducible, as Debian policy and lintian want),
# built by the target gpuclean_man in ALL and installed to ${CMAKE_INSTALL_MANDIR}/man1.
#
#   include(cmake/manpage.cmake)        from the top CMakeLists.txt
#
# GPUCLEAN_MAN (default ON) needs scdoc (Debian: apt-get install scdoc); OFF builds no man page.
# The page's date is SOURCE_DATE_EPOCH when the build environment sets it (dpkg-buildpackage
# does), else the date of the last commit that changed the .scd, else the file's mtime: the same
# source gives the same bytes (cmake/write_manpage.cmake). scripts/check_man.sh BUILD_DIR checks
# the page against the parser and man(1)'s warnings.
include(GNUInstallDirs)

option(GPUCLEAN_MAN "Build and install the man page gpuclean(1) (needs scdoc)" ON)

if(GPUCLEAN_MAN)
  find_program(GPUCLEAN_SCDOC scdoc)
  find_program(GPUCLEAN_GZIP gzip)
  if(NOT GPUCLEAN_SCDOC)
    message(FATAL_ERROR "GPUCLEAN_MAN is ON but scdoc was not found: install it "
      "(Debian/Ubuntu: apt-get install scdoc; scripts/setup.sh does), or configure with "
      "-DGPUCLEAN_MAN=OFF to build without the man page")
  endif()
  if(NOT GPUCLEAN_GZIP)
    message(FATAL_ERROR "GPUCLEAN_MAN is ON but gzip was not found (Debian: apt-get install "
      "gzip), or configure with -DGPUCLEAN_MAN=OFF")
  endif()

  set(GPUCLEAN_MAN_SOURCE ${CMAKE_CURRENT_LIST_DIR}/../docs/man/gpuclean.1.scd)
  cmake_path(NORMAL_PATH GPUCLEAN_MAN_SOURCE)
  set(GPUCLEAN_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  add_custom_command(
    OUTPUT ${GPUCLEAN_MAN_DIR}/gpuclean.1 ${GPUCLEAN_MAN_DIR}/gpuclean.1.gz
    COMMAND ${CMAKE_COMMAND} -DSCDOC=${GPUCLEAN_SCDOC} -DGZIP=${GPUCLEAN_GZIP}
      -DSOURCE=${GPUCLEAN_MAN_SOURCE} -DOUTPUT=${GPUCLEAN_MAN_DIR}/gpuclean.1
      -DVERSION=${PROJECT_VERSION} -P ${CMAKE_CURRENT_LIST_DIR}/write_manpage.cmake
    DEPENDS ${GPUCLEAN_MAN_SOURCE} ${CMAKE_CURRENT_LIST_DIR}/write_manpage.cmake
    COMMENT "Man page gpuclean(1) (scdoc)"
    VERBATIM)
  add_custom_target(gpuclean_man ALL
    DEPENDS ${GPUCLEAN_MAN_DIR}/gpuclean.1 ${GPUCLEAN_MAN_DIR}/gpuclean.1.gz)
  install(FILES ${GPUCLEAN_MAN_DIR}/gpuclean.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "GPUCLEAN_MAN is OFF: no man page gpuclean(1) is built or installed")
endif()
