# write_if_changed(PATH TEXT): writes TEXT to PATH unless PATH already holds
# it, so that a generated source is not rebuilt when nothing changed.
function(write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" old)
  else()
    set(old "")
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${path}" "${text}")
  endif()
endfunction()
