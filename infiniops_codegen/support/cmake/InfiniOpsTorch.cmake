# The torch a build is against, named as torch names itself: torch.__version__
# (with its local part, 2.14.1+cu130) and the CUDA or ROCm version it was built
# with, read from the torch's version.py (a pip install of torch; libtorch
# alone has none: then its CMake version, and no CUDA or ROCm version).
#
# A module built against one torch build loads into no other (C++ symbols,
# ABI, the CUDA runtime): the build records which one (torch-build.json beside
# the module, read by infiniops_codegen/base/torch_release.py before the module is
# loaded), and find_package(InfiniOps) compares the Torch it finds with the one
# recorded here. Shipped with the tool and installed with the CMake package.
# docs/torch-releases.md.

# infiniops_torch_build(<torch install prefix> <var>) sets <var>_VERSION,
# <var>_CUDA, <var>_HIP and <var>_TEXT (for messages: "2.14.1+cu130 (CUDA 13.0)").
function(infiniops_torch_build prefix var)
  set(_version "")
  set(_cuda "")
  set(_hip "")
  set(_file "${prefix}/version.py")
  if(EXISTS "${_file}")
    file(STRINGS "${_file}" _lines REGEX "^(__version__|cuda|hip)[ :=]")
    foreach(_line IN LISTS _lines)
      if(_line MATCHES "^(__version__|cuda|hip)[^=]*= *['\"]([^'\"]*)['\"]")
        if(CMAKE_MATCH_1 STREQUAL "__version__")
          set(_version "${CMAKE_MATCH_2}")
        elseif(CMAKE_MATCH_1 STREQUAL "cuda")
          set(_cuda "${CMAKE_MATCH_2}")
        else()
          set(_hip "${CMAKE_MATCH_2}")
        endif()
      endif()
    endforeach()
  endif()
  if(NOT _version)
    set(_version "${Torch_VERSION}")
  endif()
  if(_cuda)
    set(_text "${_version} (CUDA ${_cuda})")
  elseif(_hip)
    set(_text "${_version} (ROCm ${_hip})")
  else()
    set(_text "${_version} (CPU)")
  endif()
  set(${var}_VERSION "${_version}" PARENT_SCOPE)
  set(${var}_CUDA "${_cuda}" PARENT_SCOPE)
  set(${var}_HIP "${_hip}" PARENT_SCOPE)
  set(${var}_TEXT "${_text}" PARENT_SCOPE)
endfunction()

# infiniops_torch_record(<var> <file>) writes what infiniops_torch_build set
# for <var> as the JSON record torch_release.read_record() reads.
function(infiniops_torch_record var file)
  set(_json "{\"version\": \"${${var}_VERSION}\"")
  foreach(_key cuda hip)
    string(TOUPPER "${_key}" _KEY)
    if(${var}_${_KEY})
      string(APPEND _json ", \"${_key}\": \"${${var}_${_KEY}}\"")
    else()
      string(APPEND _json ", \"${_key}\": null")
    endif()
  endforeach()
  file(CONFIGURE OUTPUT "${file}" CONTENT "${_json}}\n" @ONLY)
endfunction()
