<?php
// Random PHP stacks for the slow log's fixed snapshot (php-sys/deadline.c: 48 frames,
// 12288 bytes of text, names cut at 256, class names in arguments at 128, strings at 32,
// files at 1024, method and URI at 512), captured under valgrind by
// server/tests/memory_boundaries.rs.
//
// GET ?seed=N&depth=D&how=sleep|busy|flock|poll|select&expect=/path&until=S[&pad=...]
//   Builds D nested calls of generated functions and static methods (names, parameter
//   counts and argument values drawn from `seed`, sizes around every cut), each calling
//   the next directly, then slowlog_leaf() waits: in usleep, a socket read or
//   stream_select (timed waits: nanosleep, poll, select), in a PHP loop
//   (a VM safe point) or in flock on a file this request already locked through another
//   handle (the slow-log signal's handler; the request's own time limit then ends it).
//   Before waiting it writes to `expect` what the snapshot must hold: every frame,
//   innermost first, with each byte string hex-encoded and cut as the capture cuts it
//   (the test applies the 12288-byte budget in capture order).

$seed = (int) ($_GET['seed'] ?? 1);
$depth = (int) ($_GET['depth'] ?? 0);
$how = (string) ($_GET['how'] ?? 'sleep');
$expect = (string) ($_GET['expect'] ?? '');
// Seconds after the request began at which the wait ends (after the slow-log moment).
$until = (float) ($_GET['until'] ?? 4);
mt_srand($seed);

function pick(array $from): mixed
{
    return $from[mt_rand(0, count($from) - 1)];
}

/** `n` bytes: letters, or any byte at all (NUL, 0x1f, invalid UTF-8). */
function bytes(int $n, bool $binary): string
{
    if ($binary) {
        $s = '';
        for ($i = 0; $i < min($n, 64); $i++) {
            $s .= chr(mt_rand(0, 255));
        }
        return str_pad($s, $n, "\xff\x00\x1f");
    }
    return substr(str_repeat('abcdefghijklmnopqrstuvwxyz', intdiv($n, 26) + 1), 0, $n);
}

/** An identifier of exactly `n` bytes (at least its unique tag). */
function ident(string $prefix, int $n): string
{
    static $serial = 0;
    $tag = $prefix . (++$serial) . '_';
    return $tag . str_repeat('x', max(0, $n - strlen($tag)));
}

// Lengths around each cut the capture applies.
const NAME_LENGTHS = [1, 8, 31, 32, 33, 127, 128, 129, 255, 256, 257, 400];
const STRING_LENGTHS = [0, 1, 31, 32, 33, 100, 4096, 1 << 20];

/** [value, the summary the capture writes for it] */
function random_arg(): array
{
    switch (mt_rand(0, 8)) {
        case 0:
            return pick([[null, 'null'], [false, 'false'], [true, 'true']]);
        case 1:
            $v = pick([0, 1, -1, 42, PHP_INT_MAX, PHP_INT_MIN, mt_rand()]);
            return [$v, "int($v)"];
        case 2:
            return pick([
                [1.5, 'float(1.5)'], [-0.25, 'float(-0.25)'], [0.0, 'float(0)'],
                [2.125, 'float(2.125)'], [1e20, 'float(1.0E+16+)'], [-1e300, 'float(-1.0E+16+)'],
                [NAN, 'float(NAN)'], [INF, 'float(INF)'], [-INF, 'float(-INF)'],
            ]);
        case 3:
        case 4:
        case 5:
            $s = bytes(pick(STRING_LENGTHS), mt_rand(0, 2) === 0);
            return [$s, 'string(' . strlen($s) . ') "' . substr($s, 0, 32) . (strlen($s) > 32 ? '..."' : '"')];
        case 6:
            $a = array_fill(0, pick([0, 1, 3, 1000]), 'v');
            return [$a, 'array(' . count($a) . ')'];
        case 7:
            $class = ident('K', pick(NAME_LENGTHS));
            eval("final class $class {}");
            return [new $class(), 'object(' . substr($class, 0, 128) . ')'];
        default:
            $r = fopen('php://memory', 'r');
            return [$r, 'resource(' . (int) $r . ')'];
    }
}

// The chain is generated innermost first, so each body can name the callable it calls.
// Every generated body is one line: each call in it is on line 1 of its eval()'d code.
$main = __FILE__;
$A = [];
$levels = [];
$next = 'slowlog_leaf';
for ($i = $depth - 1; $i >= 0; $i--) {
    $params = mt_rand(0, 8);
    $extra = mt_rand(0, 2);
    $list = $params ? implode(', ', array_map(fn ($k) => "\$p$k", range(0, $params - 1))) : '';
    $call = $i === $depth - 1 ? 'return slowlog_leaf();' : "global \$A; return $next(...\$A[" . ($i + 1) . ']);';
    if (mt_rand(0, 2) === 0) {
        $class = ident('C', pick(NAME_LENGTHS));
        $method = ident('m', pick(NAME_LENGTHS));
        eval("final class $class { public static function $method($list) { $call } }"); $file = $main . '(' . __LINE__ . ") : eval()'d code";
        $next = "\\$class::$method";
        $name = substr($class, 0, 256) . '::' . substr($method, 0, 256);
    } else {
        $function = ident('f', pick(NAME_LENGTHS));
        eval("function $function($list) { $call }"); $file = $main . '(' . __LINE__ . ") : eval()'d code";
        $next = "\\$function";
        $name = substr($function, 0, 256);
    }
    $args = [];
    $shown = [];
    for ($k = 0; $k < $params + $extra; $k++) {
        [$value, $summary] = random_arg();
        $args[] = $value;
        if ($k < min($params, 6)) {
            $shown[] = $summary;
        }
    }
    $A[$i] = $args;
    $levels[$i] = ['name' => $name, 'file' => $file, 'shown' => $shown, 'count' => $params + $extra];
}

/**
 * The innermost frame: waits until `until` seconds after the request began (the test
 * sets the slow log's threshold between the set-up, which valgrind makes slow, and that).
 */
function slowlog_leaf(): string
{
    global $how, $until;
    $end = (int) (($_SERVER['REQUEST_TIME_FLOAT'] + $until) * 1e9);
    $left = $end - (int) (microtime(true) * 1e9);
    switch ($how) {
        case 'busy':
            slowlog_write_expectation([]);
            while ((int) (microtime(true) * 1e9) < $end) { $left--; }
            return 'busy done';
        case 'flock':
            $path = sys_get_temp_dir() . '/slowlog-shapes-' . getmypid() . '-' . mt_rand();
            $held = fopen($path, 'c');
            flock($held, LOCK_EX);
            $again = fopen($path, 'c');
            slowlog_write_expectation(['resource(' . (int) $again . ')', 'int(2)']);
            set_time_limit((int) ceil($end / 1e9 - microtime(true)) + 1);
            flock($again, LOCK_EX);
            return 'flock returned (unexpected)';
        case 'poll':
            // A socket read with a timeout: PHP polls; the poll wakes for the slow log.
            [$a, $b] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
            stream_set_timeout($a, intdiv($left, 1_000_000_000) + 1);
            slowlog_write_expectation(['resource(' . (int) $a . ')', 'int(1)']);
            $got = fread($a, 1);
            return 'read ' . var_export($got, true);
        case 'select':
            // stream_select() with a timeout: PHP selects; the select wakes for the slow log.
            [$a, $b] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
            $read = [$a];
            $none = null;
            $seconds = intdiv($left, 1_000_000_000) + 1;
            slowlog_write_expectation(['array(1)', 'null', 'null', "int($seconds)"]);
            $n = stream_select($read, $none, $none, $seconds);
            return "select $n";
        default:
            $micros = max(1, intdiv($left, 1000));
            slowlog_write_expectation(["int($micros)"]);
            usleep($micros);
            return 'slept';
    }
}

/** The line of the statement slowlog_leaf() waits on, for each `how`. */
function slowlog_wait_line(string $how): int
{
    $source = file(__FILE__);
    $needle = match ($how) {
        'busy' => 'while ((int) (microtime(true) * 1e9) < $end)',
        'flock' => 'flock($again, LOCK_EX);',
        'poll' => '$got = fread($a, 1);',
        'select' => '$n = stream_select($read, $none, $none, $seconds);',
        default => 'usleep($micros);',
    };
    foreach ($source as $i => $text) {
        if (str_contains($text, $needle) && !str_contains($text, '=>')) {
            return $i + 1;
        }
    }
    return 0;
}

/** `waitArgs`: the summaries of the waiting internal call's arguments. */
function slowlog_write_expectation(array $waitArgs): void
{
    global $how, $main, $levels, $depth, $expect, $mainLine;
    $hex = 'bin2hex';
    $frames = [];
    $waitLine = slowlog_wait_line($how);
    if ($how === 'sleep') {
        $frames[] = ['function' => 'usleep', 'file' => $main, 'line' => $waitLine,
            'args' => $waitArgs, 'arg_count' => 1];
    } elseif ($how === 'flock') {
        $frames[] = ['function' => 'flock', 'file' => $main, 'line' => $waitLine,
            'args' => $waitArgs, 'arg_count' => 2];
    } elseif ($how === 'poll') {
        $frames[] = ['function' => 'fread', 'file' => $main, 'line' => $waitLine,
            'args' => $waitArgs, 'arg_count' => 2];
    } elseif ($how === 'select') {
        $frames[] = ['function' => 'stream_select', 'file' => $main, 'line' => $waitLine,
            'args' => $waitArgs, 'arg_count' => 4];
    }
    $frames[] = ['function' => 'slowlog_leaf',
        'file' => $depth ? $levels[$depth - 1]['file'] : $main,
        'line' => $depth ? 1 : $mainLine, 'args' => [], 'arg_count' => 0];
    for ($i = $depth - 1; $i >= 0; $i--) {
        $frames[] = ['function' => $levels[$i]['name'],
            'file' => $i ? $levels[$i - 1]['file'] : $main,
            'line' => $i ? 1 : $mainLine, 'args' => $levels[$i]['shown'],
            'arg_count' => $levels[$i]['count']];
    }
    $frames[] = ['function' => '{main}', 'file' => $main, 'line' => $mainLine, 'args' => [], 'arg_count' => 0];
    $cut = fn (string $s, int $n) => $hex(substr($s, 0, $n));
    $out = [
        'innermost_file' => $cut($main, 1024),
        'innermost_line' => $waitLine,
        // The innermost PHP frame's file is written when the capture reaches that frame.
        'innermost_at' => $how === 'busy' ? 0 : 1,
        'frames' => array_map(fn ($f) => [
            'function' => $hex($f['function']),
            'file' => $cut($f['file'], 1024),
            'line' => $f['line'],
            'args' => array_map($hex, $f['args']),
            'arg_count' => $f['arg_count'],
        ], $frames),
    ];
    file_put_contents($expect, json_encode($out));
    // When the request was ready to wait: the slow-log moment must come after this.
    file_put_contents("$expect.ready_ms", (string) (int) ((microtime(true) - $_SERVER['REQUEST_TIME_FLOAT']) * 1000));
}

$mainLine = __LINE__ + 1;
echo $depth ? (ltrim($next, '\\'))(...$A[0]) : slowlog_leaf();
