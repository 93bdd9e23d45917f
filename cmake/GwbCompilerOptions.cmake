# Project-wide compiler settings, applied to our targets through gwb_target_defaults().
add_library(gwb_options INTERFACE)
target_compile_options(gwb_options INTERFACE -Wall -Wextra -Wpedantic)
if(GWB_WERROR)
  target_compile_options(gwb_options INTERFACE -Werror)
  # GCC 12's flow-based warnings fire inside libstdc++ on inlined std::string/std::vector code at
  # -O2/-O3 (GCC bugs 105329, 105651, 106199): keep them visible as warnings, not errors.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(gwb_options INTERFACE -Wno-error=stringop-overflow -Wno-error=array-bounds
                                                 -Wno-error=restrict -Wno-error=maybe-uninitialized)
  endif()
endif()
target_compile_definitions(gwb_options INTERFACE QT_NO_KEYWORDS GWB_VERSION="${PROJECT_VERSION}")
if(GWB_SANITIZE)
  target_compile_options(gwb_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                               -fno-sanitize-recover=undefined)
  target_link_options(gwb_options INTERFACE -fsanitize=address,undefined)
endif()

# Torch's own headers are not warning-clean under -Wpedantic; include them as system headers.
function(gwb_target_defaults target)
  target_link_libraries(${target} PRIVATE gwb_options)
endfunction()
