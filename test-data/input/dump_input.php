<?php
// Everything PHP made of the request's Cookie header and query string: the superglobals
// and the filter extension's raw copies. worker/tests/input_parsing.rs compares this
// dump between PHP's own parser and ferrophp's fast path.
echo "COOKIE:\n"; var_dump($_COOKIE);
echo "RAW COOKIE:\n"; var_dump(filter_input_array(INPUT_COOKIE, FILTER_UNSAFE_RAW));
foreach (array_keys($_COOKIE) as $k) { if (is_string($k)) { var_dump(filter_has_var(INPUT_COOKIE, $k), filter_input(INPUT_COOKIE, $k)); } }
echo "GET:\n"; var_dump($_GET);
echo "RAW GET:\n"; var_dump(filter_input_array(INPUT_GET, FILTER_UNSAFE_RAW));
foreach (array_keys($_GET) as $k) { if (is_string($k)) { var_dump(filter_has_var(INPUT_GET, $k), filter_input(INPUT_GET, $k)); } }
echo "REQUEST:\n"; var_dump($_REQUEST);
echo "ERROR:\n"; var_dump(error_get_last());
