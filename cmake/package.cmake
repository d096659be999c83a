# The Debian package (CPack's DEB generator; scripts/package.sh runs it, with the release
# tarball). Depends comes from dpkg-shlibdeps on the installed binary, so it names exactly the
# libraries the build linked (libc6, prometheus-cpp's core library when metrics is built in). NVML is loaded at run time when present, so the driver is only suggested.
set(GPUCLEAN_PACKAGE_MAINTAINER "gpuclean developers <packaging@gpuclean.invalid>" CACHE STRING
  "Maintainer field of the .deb (and the changelog's signer)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuclean)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "${GPUCLEAN_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "find, explain and clean up whatever holds your GPUs")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gpuclean_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libnvidia-ml1, prometheus-node-exporter")
# The Slurm epilog (share/gpuclean/slurm/epilog.sh) reads gpuclean's JSON with jq; without it the
# epilog drains the node (issue 50: neither a Depends nor a Recommends said so).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "jq")
# Debian's extended description (CPack puts the summary above it and indents each line by one
# space); "." is an empty line.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "gpuclean finds every process holding the NVIDIA device files, including the
zombie-led thread groups that fuser and lsof cannot see, explains where each
GPU's memory went (orphans, heirs of a dead owner, MPS leftovers), ends exactly
the right processes and verifies through NVML that the memory came back.
.
It also supervises workloads so that nothing they start outlives them, guards
benchmarks with a pre-flight check and environment snapshots, and exports
Prometheus metrics. Slurm prolog/epilog scripts, systemd units and Kubernetes
examples are included.")
include(CPack)
