include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
# The triage engine as a static library (cutriage::triage), with the base library it builds on.
install(TARGETS cutriage_base cutriage_triage EXPORT cutriageTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY base/include/ triage/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The agent as a library a service links (find_package(cutriage) -> cutriage::agent): the shared
# library with its C API header. It reaches libcupti through its RUNPATH and the driver at run
# time, so a consumer needs nothing else from the toolkit.
if(TARGET cutriage_agent)
  set_target_properties(cutriage_agent PROPERTIES EXPORT_NAME agent)
  install(TARGETS cutriage_agent EXPORT cutriageTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES agent/include/cutriage/cutriage.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cutriage)
endif()
if(TARGET cutriage_cli)
  install(TARGETS cutriage_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT cutriageTargets NAMESPACE cutriage:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cutriage)
configure_package_config_file(cmake/cutriageConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cutriageConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cutriage)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cutriageConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cutriageConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/cutriageConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cutriage)
