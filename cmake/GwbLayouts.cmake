# gwb_builtin_layouts(OUT): writes <current binary dir>/builtin_layouts.cpp holding the text of
# every resources/layouts/*.json (engine/src/import/layout_file.h) and sets OUT to its path.
# Re-runs the configure step when a layout file changes.
function(gwb_builtin_layouts OUT)
  file(GLOB layouts CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/resources/layouts/*.json)
  set(GWB_LAYOUT_ENTRIES "")
  foreach(layout IN LISTS layouts)
    file(READ ${layout} text)
    get_filename_component(name ${layout} NAME)
    string(APPEND GWB_LAYOUT_ENTRIES "        {\"${name}\", R\"gwblayout(${text})gwblayout\"},\n")
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${layouts})
  configure_file(${CMAKE_SOURCE_DIR}/engine/src/import/builtin_layouts.cpp.in
                 ${CMAKE_CURRENT_BINARY_DIR}/builtin_layouts.cpp @ONLY)
  set(${OUT} ${CMAKE_CURRENT_BINARY_DIR}/builtin_layouts.cpp PARENT_SCOPE)
endfunction()
