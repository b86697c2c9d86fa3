<?php
// Measures recursion: ?kind=internal (a closure through array_map: every level nests C
// frames), callback (a function through call_user_func), tostring (__toString) or user
// (plain calls: the VM's own stack, on the heap). Recurses until ?max= levels (or
// until something stops it), appending "depth heap_bytes" to ?log= every 1000 levels so
// the depth reached survives a crash. Used for docs/operating.md ("Deep recursion").
$log = $_GET['log'] ?? null;
$max = (int) ($_GET['max'] ?? PHP_INT_MAX);
$note = static function (int $n) use ($log): void {
    if ($log !== null && $n % 1000 === 0) {
        file_put_contents($log, $n . ' ' . memory_get_usage() . "\n", FILE_APPEND);
    }
};
$kind = $_GET['kind'] ?? 'user';
if ($kind === 'callback') {
    // The lightest C-nesting level: a named function through call_user_func.
    if (!function_exists('depth_callback')) {
        function depth_callback(int $n, callable $note, int $max) {
            $note($n);
            return $n >= $max ? $n : call_user_func('depth_callback', $n + 1, $note, $max);
        }
    }
    echo depth_callback(0, $note, $max);
    return;
}
if ($kind === 'tostring') {
    // A magic method: no internal function between the levels.
    if (!class_exists('DepthString')) {
        class DepthString {
            public static $note;
            public static $max;
            public function __construct(private int $n) {}
            public function __toString(): string {
                (self::$note)($this->n);
                return $this->n >= self::$max ? (string) $this->n : (string) new self($this->n + 1);
            }
        }
    }
    DepthString::$note = $note;
    DepthString::$max = $max;
    echo new DepthString(0);
    return;
}
if ($kind === 'internal') {
    $g = static function (int $n) use (&$g, $note, $max) {
        $note($n);
        return $n >= $max ? $n : array_map($g, [$n + 1])[0];
    };
} else {
    $g = static function (int $n) use (&$g, $note, $max) {
        $note($n);
        return $n >= $max ? $n : $g($n + 1);
    };
}
echo $g(0);
