<?php
// Failures of every kind: uncaught exception, fatal error, memory limit, exit with a status.
switch (mt_rand(0, 3)) {
    case 0: throw new RuntimeException('soak');
    case 1: undefined_function_for_soak();
    case 2: ini_set('memory_limit', '8M'); $a = str_repeat('m', 16 << 20); break;
    default: http_response_code(500); exit(3);
}
