# Install rules and the CPack .deb (`cmake --build build --target package` -> build/tierd_*.deb;
# the package that ships: the release preset, below).
# The package installs into the usual Debian places:
#   /usr/bin/tierd, /usr/bin/tierctl                 binaries
#   /lib/systemd/system/tierd.service                the unit (config/tierd.service)
#   /etc/tierd/tierd.toml                            default config, a dpkg conffile
#   /usr/share/tierd/dashboards/*.json               Grafana dashboards
#   /usr/share/tierd/grafana/provisioning/...        Grafana provisioning examples
#   /usr/share/tierd/alerts/tierd.rules.yml          Prometheus alerting rules (alerts/)
#   /etc/tierd/profiles/*.toml                       config profiles (config/profiles/), conffiles
#   /usr/share/doc/tierd/examples/                   example configs (config/tierd-*.toml)
#   /usr/share/doc/tierd/                            README.md and docs/*.md but benchmarks.md,
#                                                    copyright (DEP-5), changelog.Debian.gz
#   /usr/share/man/man8/tierd.8.gz, tierctl.8.gz     manual pages (docs/man/), and
#   /usr/share/man/man5/tierd.toml.5.gz              the config's
# Paths under /lib and /etc are absolute on purpose (Debian bookworm layout).
# The release package: `cmake --preset release && cmake --build --preset release &&
# cpack --preset release` (build-release/tierd_*.deb); lintian passes on it with no error
# (tests/integration/deb_lintian_test.sh).
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
install(FILES ${PROJECT_SOURCE_DIR}/alerts/tierd.rules.yml
              ${PROJECT_SOURCE_DIR}/alerts/tierd.rules.test.yml DESTINATION share/tierd/alerts)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/tierd)
# Files the package installs compressed (gzip -9n: no name or timestamp, so the package is
# reproducible), made at build time from the source file: build/packaging/NAME.gz.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/packaging)
set(_tierd_gzipped "")
function(tierd_gzip source name destination)
  set(_out ${CMAKE_BINARY_DIR}/packaging/${name}.gz)
  add_custom_command(OUTPUT ${_out} COMMAND sh -c "gzip -9nc \"$1\" > \"$2\"" gzip ${source} ${_out}
                     DEPENDS ${source} VERBATIM)
  install(FILES ${_out} DESTINATION ${destination})
  set(_tierd_gzipped ${_tierd_gzipped} ${_out} PARENT_SCOPE)
endfunction()

# Debian's copyright file (machine-readable, DEP-5) and the package's changelog.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright DESTINATION share/doc/tierd)
tierd_gzip(${PROJECT_SOURCE_DIR}/packaging/changelog changelog.Debian share/doc/tierd)
# The manual pages tierd(8), tierctl(8), tierd.toml(5): docs/man/ (rendered by
# `tierd --print-man-page`, kept in step by the man_pages_itest drift test).
foreach(_page tierd.8 tierctl.8 tierd.toml.5)
  string(REGEX REPLACE "^.*\\.([0-9])$" "\\1" _section ${_page})
  tierd_gzip(${PROJECT_SOURCE_DIR}/docs/man/${_page} ${_page} share/man/man${_section})
endforeach()
add_custom_target(tierd_package_files ALL DEPENDS ${_tierd_gzipped})
# lintian's overrides: only tags that do not apply to a package outside the Debian archive, each
# with its reason (packaging/lintian-overrides).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/lintian-overrides DESTINATION share/lintian/overrides
        RENAME tierd)
# docs/benchmarks.md and its plots in docs/bench/ are the rig's emulation measurements, for the
# developers who run scripts/bench, not documentation of the installed product.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/tierd FILES_MATCHING PATTERN "*.md"
        PATTERN "benchmarks.md" EXCLUDE PATTERN "bench" EXCLUDE PATTERN "man" EXCLUDE)

# Maintainer scripts: debhelper's systemd snippets (deb-systemd-helper, deb-systemd-invoke), as
# dh_installsystemd --no-enable --no-start writes them. The service is not enabled or started by
# installing: the operator reviews /etc/tierd/tierd.toml first; an upgrade restarts a running one.
set(_tierd_control_extra ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm)
if(NOT _tierd_conffiles STREQUAL "")
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "${_tierd_conffiles}")
  list(APPEND _tierd_control_extra ${CMAKE_BINARY_DIR}/packaging/conffiles)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tierd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Debian revision: the package's version is PROJECT_VERSION-1, the top entry of packaging/changelog
# (a new version or revision needs a new changelog entry; the lintian test compares them).
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_PACKAGE_VENDOR "tierd")
# Also in packaging/changelog and packaging/copyright.
set(CPACK_PACKAGE_CONTACT "tierd maintainers <maintainers@tierd.dev>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "memory-tiering daemon: moves hot pages to DRAM and cold pages to CXL memory")
# The extended description (Debian's control field; lines of at most 79 characters).
file(READ ${PROJECT_SOURCE_DIR}/packaging/description CPACK_DEBIAN_PACKAGE_DESCRIPTION)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/packaging/description)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_tierd_control_extra})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
