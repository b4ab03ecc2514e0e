# cmake -DFUZZER=... -DWORK=... -DSEEDS=a|b|... -DRUNS=N -P RunFuzzer.cmake
# Copies every file under the seed folders into WORK/corpus, runs each of
# them once (the regression inputs), then, when RUNS > 0, fuzzes RUNS inputs
# from there with a fixed random seed.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus)
string(REPLACE "|" ";" seed_dirs "${SEEDS}")
set(n 0)
foreach(dir ${seed_dirs})
  file(GLOB_RECURSE seeds LIST_DIRECTORIES false ${dir}/*)
  foreach(seed ${seeds})
    math(EXPR n "${n} + 1")
    configure_file(${seed} ${WORK}/corpus/seed-${n} COPYONLY)
  endforeach()
endforeach()
message(STATUS "${n} seeds")
execute_process(
  COMMAND ${FUZZER} -runs=0 -rss_limit_mb=2048 -timeout=10 ${WORK}/corpus
  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE seeds_rc)
if(NOT seeds_rc EQUAL 0)
  message(FATAL_ERROR "a seed input fails the fuzzer target (exit ${seeds_rc})")
endif()
if(NOT RUNS GREATER 0)
  return()
endif()
execute_process(
  COMMAND ${FUZZER} -runs=${RUNS} -seed=1 -rss_limit_mb=2048
          -timeout=10 -max_len=8192 -print_final_stats=1 ${WORK}/corpus
  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK}/crash-* ${WORK}/leak-* ${WORK}/timeout-* ${WORK}/oom-*)
  message(FATAL_ERROR "the fuzzer failed (exit ${rc}); input(s): ${found} "
                      "(add them to the committed corpus once fixed)")
endif()
