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

# Unity builds (GWB_UNITY_BUILD, on in the presets that build everything): a target's sources are
# compiled GWB_UNITY_BATCH at a time, so Qt's and Torch's headers are parsed and their templates
# instantiated once per batch instead of once per file. Only for targets whose objects are not
# shared between build trees through ccache (a unity file's path is its tree's own): the window's
# and figures' libraries and tests, and the Torch sources, which differ per LibTorch anyway.
function(gwb_unity target)
  if(GWB_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${GWB_UNITY_BATCH})
  endif()
endfunction()

# Torch's own headers are not warning-clean under -Wpedantic; include them as system headers.
function(gwb_target_defaults target)
  target_link_libraries(${target} PRIVATE gwb_options)
endfunction()

# Every executable, test and module binds libstdc++'s symbols to libstdc++ itself. PyTorch's pip
# and conda wheels export the libstdc++ symbols they link statically (std::filesystem among them;
# pytorch/pytorch#133437) without symbol versions, so an unversioned copy inside libtorch satisfies
# our GLIBCXX-versioned references. The dynamic linker takes the first definition in load order,
# and by default libtorch comes first: our std::filesystem calls jumped into libtorch's copy and
# crashed. Naming libstdc++ before everything else on every link line (these options precede the
# objects and libraries) puts it first among each binary's DT_NEEDED entries, so it is searched
# first, also inside a Python process that imported torch before us. tests/link checks it.
function(gwb_bind_libstdcxx_first)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
  endif()
endfunction()
