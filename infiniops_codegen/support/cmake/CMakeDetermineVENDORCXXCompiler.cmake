# VENDORCXX: kernel sources of platforms whose vendor compiler (mxcc, mcc,
# cncc, ...) is not a language CMake knows. Any compiler with a GCC-style
# command line works: `<compiler> <defines> <includes> <flags> -o X -c SRC`.
# CMakeLists.txt sets CMAKE_VENDORCXX_COMPILER before enable_language().
if(NOT CMAKE_VENDORCXX_COMPILER)
  message(FATAL_ERROR "CMAKE_VENDORCXX_COMPILER is not set (CMakeLists.txt sets it "
                      "from INFINI_OPS_<PLATFORM>_COMPILER)")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/CMakeVENDORCXXCompiler.cmake.in"
               "${CMAKE_PLATFORM_INFO_DIR}/CMakeVENDORCXXCompiler.cmake" @ONLY)
set(CMAKE_VENDORCXX_COMPILER_ENV_VAR "VENDORCXX")
