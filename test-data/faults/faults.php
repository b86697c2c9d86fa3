<?php
// ?do= how this request fails: fatal, exit, throw, memory, timeout, recurse (user function
// recursion), recurse_internal (recursion through array_map) and recurse_tostring
// (through __toString), which nest C frames as well.
// ?ms=: sleep first. Anything else: "ok".
usleep((int) ($_GET['ms'] ?? 0) * 1000);
switch ($_GET['do'] ?? '') {
    case 'fatal':
        echo 'before fatal';
        undefined_function_for_a_fatal_error();
        break;
    case 'exit':
        echo 'before exit';
        exit(3);
    case 'throw':
        throw new RuntimeException('uncaught');
    case 'memory':
        $chunks = [];
        while (true) {
            $chunks[] = str_repeat('x', 1 << 20);
        }
    case 'timeout':
        set_time_limit(1);
        while (true) {
        }
    case 'recurse':
        if (!function_exists('f')) {
            function f($n) { return f($n + 1); }
        }
        f(0);
        break;
    case 'recurse_tostring':
        if (!class_exists('Endless')) {
            class Endless {
                public function __toString(): string { return (string) new self(); }
            }
        }
        echo new Endless();
        break;
    case 'recurse_internal':
        $g = static function ($n) use (&$g) { return array_map($g, [$n + 1]); };
        $g(0);
        break;
}
echo 'ok';
