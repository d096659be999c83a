# What `cmake --install` puts where (issue 16), relative to the prefix: /usr for the .deb,
# the unpacked directory for the release tarball (scripts/package.sh builds both).
#
#   bin/gpuclean
#   share/man/man1/gpuclean.1.gz                      (cmake/manpage.cmake)
#   share/bash-completion/completions/gpuclean        completions, generated at build time by
#   share/zsh/vendor-completions/_gpuclean            the binary itself (`gpuclean completion
#   share/fish/vendor_completions.d/gpuclean.fish     SHELL`), so they match its parser
#   share/gpuclean/slurm/, share/gpuclean/k8s/,       contrib/ (docs/fleet.md)
#   share/gpuclean/prometheus/
#   lib/systemd/system/gpuclean-*.{service,timer}    contrib/systemd/
#   share/doc/gpuclean/                               copyright, changelog.gz, README.md
#   share/lintian/overrides/gpuclean                  ncurses linked in (packaging/)
include(GNUInstallDirs)

install(TARGETS gpuclean RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Completions: where bash-completion, zsh (Debian's vendor directory) and fish look for a
# command's completions, so nothing has to be sourced by hand after installing.
set(GPUCLEAN_COMPLETION_DIR ${CMAKE_BINARY_DIR}/completions)
set(completion_files)
foreach(shell_and_file IN ITEMS "bash|gpuclean" "zsh|_gpuclean" "fish|gpuclean.fish")
  string(REPLACE "|" ";" pair "${shell_and_file}")
  list(GET pair 0 shell)
  list(GET pair 1 file)
  add_custom_command(OUTPUT ${GPUCLEAN_COMPLETION_DIR}/${file}
    COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:gpuclean> -DSHELL_NAME=${shell}
      -DOUTPUT=${GPUCLEAN_COMPLETION_DIR}/${file} -P ${CMAKE_SOURCE_DIR}/cmake/write_completion.cmake
    DEPENDS gpuclean ${CMAKE_SOURCE_DIR}/cmake/write_completion.cmake
    COMMENT "gpuclean completion ${shell}" VERBATIM)
  list(APPEND completion_files ${GPUCLEAN_COMPLETION_DIR}/${file})
endforeach()
add_custom_target(gpuclean_completions ALL DEPENDS ${completion_files})
install(FILES ${GPUCLEAN_COMPLETION_DIR}/gpuclean
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${GPUCLEAN_COMPLETION_DIR}/_gpuclean
  DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${GPUCLEAN_COMPLETION_DIR}/gpuclean.fish
  DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)

# Slurm prolog/epilog/health check (run by slurmd) and the Kubernetes examples.
install(PROGRAMS contrib/slurm/prolog.sh contrib/slurm/epilog.sh contrib/slurm/healthcheck.sh
  DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuclean/slurm)
install(FILES contrib/slurm/common.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuclean/slurm)
install(FILES contrib/k8s/README.md contrib/k8s/daemonset.yaml contrib/k8s/networkpolicy.yaml
  contrib/k8s/servicemonitor.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuclean/k8s)
# The alert and recording rules (and their promtool unit tests, which document what each rule
# means).
install(FILES contrib/prometheus/alerts.yml contrib/prometheus/alerts_test.yml
  contrib/prometheus/recording.yml contrib/prometheus/recording_test.yml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuclean/prometheus)

# systemd units: the metrics listener, the textfile writer with its timer, the flight recorder.
set(GPUCLEAN_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
  "Where the systemd units go, relative to the prefix (or absolute)")
install(FILES contrib/systemd/gpuclean-metrics.service contrib/systemd/gpuclean-textfile.service
  contrib/systemd/gpuclean-textfile.timer contrib/systemd/gpuclean-recorder.service DESTINATION ${GPUCLEAN_SYSTEMD_UNIT_DIR})

# Documentation: the copyright file and a compressed changelog, where Debian policy wants them.
set(changelog_gz ${CMAKE_BINARY_DIR}/changelog.gz)
add_custom_command(OUTPUT ${changelog_gz}
  COMMAND gzip -9n -c ${CMAKE_SOURCE_DIR}/packaging/changelog > ${changelog_gz}
  DEPENDS ${CMAKE_SOURCE_DIR}/packaging/changelog COMMENT "" )
add_custom_target(gpuclean_changelog ALL DEPENDS ${changelog_gz})
install(FILES packaging/copyright ${changelog_gz} README.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
# ncurses is linked in (gpuclean top, CMakeLists.txt): said to lintian where it looks.
install(FILES packaging/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
  RENAME gpuclean)
