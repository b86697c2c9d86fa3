<?php
// Unbounded recursion through an internal function: each level re-enters the executor
// on the C stack (array_map -> zend_call_function -> execute_ex). With a small PHP thread
// stack (the test passes --php-stack-mb 8) the C stack overflows long before memory_limit
// is reached. PHP 8.2 has no stack-overflow guard: the whole process dies, as it would
// with a crashing extension.
function dive(int $depth): int
{
    return array_map('dive', [$depth + 1])[0];
}
echo dive(0);
