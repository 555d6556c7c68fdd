# install + export: find_package(loom) gives loom::loom; pkg-config gives loom.pc.
include(CMakePackageConfigHelpers)

install(TARGETS loom EXPORT loomTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT loomTargets NAMESPACE loom:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/loom)

configure_package_config_file(cmake/loomConfig.cmake.in
  ${PROJECT_BINARY_DIR}/loomConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/loom)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/loomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/loomConfig.cmake ${PROJECT_BINARY_DIR}/loomConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/loom)

configure_file(cmake/loom.pc.in ${PROJECT_BINARY_DIR}/loom.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/loom.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
