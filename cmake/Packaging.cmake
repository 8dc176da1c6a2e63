# Install rules and the CPack .deb (`cmake --build build --target package` -> build/tierd_*.deb).
# The package installs into the usual Debian places:
#   /usr/bin/tierd, /usr/bin/tierctl                 binaries
#   /lib/systemd/system/tierd.service                the unit (config/tierd.service)
#   /etc/tierd/tierd.toml                            default config, a dpkg conffile
#   /usr/share/tierd/dashboards/*.json               Grafana dashboards
#   /usr/share/tierd/grafana/provisioning/...        Grafana provisioning examples
#   /etc/tierd/profiles/*.toml                       config profiles (config/profiles/), conffiles
#   /usr/share/doc/tierd/examples/                   example configs (config/tierd-*.toml)
#   /usr/share/doc/tierd/                            README.md and docs/*.md but benchmarks.md
# Paths under /lib and /etc are absolute on purpose (Debian bookworm layout).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

install(TARGETS tierd tierctl RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/config/tierd.service DESTINATION /lib/systemd/system)
set(_tierd_conffiles "")
if(EXISTS ${PROJECT_SOURCE_DIR}/config/tierd.toml)
  install(FILES ${PROJECT_SOURCE_DIR}/config/tierd.toml DESTINATION /etc/tierd
          PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  string(APPEND _tierd_conffiles "/etc/tierd/tierd.toml\n")
endif()
# Profiles are looked up in <config dir>/profiles, then /etc/tierd/profiles (policy/ConfigCompiler):
# conffiles too, so local edits survive upgrades.
file(GLOB _tierd_profiles ${PROJECT_SOURCE_DIR}/config/profiles/*.toml)
foreach(_p ${_tierd_profiles})
  install(FILES ${_p} DESTINATION /etc/tierd/profiles
          PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  get_filename_component(_name ${_p} NAME)
  string(APPEND _tierd_conffiles "/etc/tierd/profiles/${_name}\n")
endforeach()
# Example configs for the shipped profiles (config/tierd-<workload>.toml).
file(GLOB _tierd_examples ${PROJECT_SOURCE_DIR}/config/tierd-*.toml)
if(_tierd_examples)
  install(FILES ${_tierd_examples} DESTINATION share/doc/tierd/examples)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/dashboards/ DESTINATION share/tierd/dashboards
        FILES_MATCHING PATTERN "*.json" PATTERN "provisioning" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/dashboards/provisioning/
        DESTINATION share/tierd/grafana/provisioning)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/tierd)
# docs/benchmarks.md and its plots in docs/bench/ are the rig's emulation measurements, for the
# developers who run scripts/bench, not documentation of the installed product.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/tierd FILES_MATCHING PATTERN "*.md"
        PATTERN "benchmarks.md" EXCLUDE PATTERN "bench" EXCLUDE)

# Maintainer scripts: reload systemd's unit files; stop the service before removal. The service
# is not enabled or started by installing: the operator reviews /etc/tierd/tierd.toml first.
set(_tierd_control_extra ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm)
if(NOT _tierd_conffiles STREQUAL "")
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "${_tierd_conffiles}")
  list(APPEND _tierd_control_extra ${CMAKE_BINARY_DIR}/packaging/conffiles)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tierd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "tierd")
set(CPACK_PACKAGE_CONTACT "tierd maintainers <tierd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "memory-tiering daemon: moves hot pages to DRAM and cold pages to CXL memory")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_tierd_control_extra})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
