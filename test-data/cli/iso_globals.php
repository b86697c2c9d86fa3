<?php
// Each run fills globals, statics, a class static and output with data derived from its
// own tag; any cross-talk between PHP threads shows up as a wrong byte in the output.
$tag = $argv[1];
$GLOBALS['shared_name'] = $tag;
function counter(string $tag): string {
    static $calls = 0;
    $calls++;
    return $tag . ':' . $calls;
}
final class Holder { public static array $items = []; }
$out = '';
for ($i = 0; $i < 200; $i++) {
    Holder::$items[] = $tag . $i;
    $out .= counter($tag) . ',';
    if ($i % 50 === 0) {
        usleep(100);
    }
}
ob_start();
echo $out, "\n", implode('', Holder::$items), "\n", $GLOBALS['shared_name'], "\n";
echo str_repeat($tag, 1000), "\n";
ob_end_flush();
