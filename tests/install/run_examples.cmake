# Runs the example programs on the shipped language-identification model and sample texts.
# Each sample is named langid-<label>.txt; the classifier's top label must be that label.
file(STRINGS ${SOURCE}/examples/models/langid.labels.txt labels)
file(GLOB samples ${SOURCE}/examples/data/langid-*.txt)
list(LENGTH samples count)
if(count LESS 2)
  message(FATAL_ERROR "expected sample texts examples/data/langid-*.txt")
endif()
foreach(sample ${samples})
  get_filename_component(name ${sample} NAME_WE)
  string(REPLACE "langid-" "" want ${name})
  foreach(dtype f32 int8)
    execute_process(COMMAND ${LAUNCHER} ${CLASSIFY} ${SOURCE}/examples/models/langid.${dtype}.lfm
                    ${SOURCE}/examples/models/langid.labels.txt ${sample}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message("${name} ${dtype}: ${out}")
    if(NOT rc EQUAL 0 OR NOT out MATCHES "^${want} \\([0-9.]+%\\)")
      message(FATAL_ERROR "linfer_classify (${dtype}) did not say '${want}' for ${sample}: ${out}${err}")
    endif()
  endforeach()
  execute_process(COMMAND ${LAUNCHER} ${EXAMPLE_C} ${SOURCE}/examples/models/langid.f16.lfm --text ${sample}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  list(FIND labels ${want} index)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "class ${index}\n")
    message(FATAL_ERROR "linfer_example_c (f16) did not give class ${index} (${want}) for ${sample}: ${out}")
  endif()
endforeach()
list(GET samples 0 a)
list(GET samples 1 b)
execute_process(COMMAND ${LAUNCHER} ${EMBED} ${SOURCE}/examples/models/langid.f32.lfm ${a} ${a}
                RESULT_VARIABLE rc OUTPUT_VARIABLE same)
execute_process(COMMAND ${LAUNCHER} ${EMBED} ${SOURCE}/examples/models/langid.f32.lfm ${a} ${b}
                RESULT_VARIABLE rc2 OUTPUT_VARIABLE different)
message("${same}${different}")
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT same MATCHES "cosine similarity 1.0000"
   OR NOT different MATCHES "cosine similarity -?0\\.[0-9]+")
  message(FATAL_ERROR "linfer_embed: a text must be identical to itself and differ from another")
endif()
