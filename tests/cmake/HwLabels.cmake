# Included by ctest (TEST_INCLUDE_FILES) after a doctest executable's discovered tests, with
# TIERD_HW_TESTS_VAR naming the list of its test names (doctest's <target>_TESTS) and
# TIERD_HW_BASE_LABEL its label (unit / integration). Test cases whose name ends in "[hw]" need
# the host's hardware or kernel features (perf_event_open, THP, a hugetlb pool, a PMU, several
# NUMA nodes): they get the label `hw` in addition, so `ctest -L hw` selects them and
# `ctest -L 'unit|integration'` still runs them (and shows them as skipped where they cannot run).
foreach(tierd_hw_test IN LISTS ${TIERD_HW_TESTS_VAR})
  if(tierd_hw_test MATCHES "\\[hw\\]$")
    set_tests_properties("${tierd_hw_test}" PROPERTIES LABELS "${TIERD_HW_BASE_LABEL};hw")
  endif()
endforeach()
