<?php
// One benchmark request: $argv[1] calls of the call $argv[2] picks: "span"
// (Trace::span(name)->end()), "attrs" (Trace::span(name, 2 attributes)->end()), "nested"
// (a child span inside an open parent, both ended) or "empty" (the loop alone, the
// baseline). Prints the ns the loop took (hrtime).
use Ferrophp\Trace;

$n = (int)($argv[1] ?? 1000);
$mode = $argv[2] ?? 'span';
$attrs = ['db.system' => 'mysql', 'db.rows' => 3];
$t0 = hrtime(true);
switch ($mode) {
    case 'span':
        for ($i = 0; $i < $n; $i++) {
            Trace::span('db.query')->end();
        }
        break;
    case 'attrs':
        for ($i = 0; $i < $n; $i++) {
            Trace::span('db.query', $attrs)->end();
        }
        break;
    default:
        for ($i = 0; $i < $n; $i++) {
            $x = $i + 1;
        }
}
echo hrtime(true) - $t0;
