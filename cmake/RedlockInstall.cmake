include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS redlock EXPORT redlockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/redlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT redlockTargets NAMESPACE redlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)

configure_package_config_file(cmake/redlockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/redlockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/redlockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/redlockConfig.cmake ${PROJECT_BINARY_DIR}/redlockConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)
