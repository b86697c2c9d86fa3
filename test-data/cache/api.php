<?php
// Functional checks of UserCache\Cache in one request; prints "FAIL <what>" lines and
// "DONE <n> checks" at the end. Run by worker/tests/cache_api.rs.
declare(strict_types=1);
use UserCache\Cache;
$n = 0;
function check(bool $ok, string $what): void { global $n; $n++; if (!$ok) echo "FAIL $what\n"; }
function throws(callable $f, string $class, string $contains = ''): bool {
    try { $f(); } catch (Throwable $e) { return $e instanceof $class && str_contains($e->getMessage(), $contains) ?: (print("  got " . get_class($e) . ": " . $e->getMessage() . "\n")) && false; }
    return false;
}
Cache::clear();
// Scalars and strings.
foreach (['null' => null, 'f' => false, 't' => true, 'i' => -7, 'd' => 1.25, 's' => "héllo\0x", 'e' => '', 'ea' => []] as $k => $v) {
    check(Cache::store("v:$k", $v), "store $k");
    check(Cache::fetch("v:$k", 'dflt', $found) === $v && $found === true, "round trip $k");
}
// Arrays: nested, packed, hash, numeric-string keys, separation on write.
$arr = ['a' => [1, 2, ['x' => 'y']], 5 => 'five', '10' => 'ten', 'list' => range(1, 100), 'f' => 1.5, 'n' => null];
Cache::store('arr', $arr);
$got = Cache::fetch('arr');
check($got === $arr, 'array round trip');
$got['a'][2]['x'] = 'changed'; $got[] = 'new';
check(Cache::fetch('arr') === $arr, 'write to a fetched array does not change the cache');
foreach (Cache::fetch('arr') as $k => $v) { $copy[$k] = $v; }
check($copy === $arr, 'foreach over a cached array');
check(array_sum(Cache::fetch('arr')['list']) === 5050, 'functions read cached arrays');
$s = Cache::fetch('v:s'); $s .= '!'; check(Cache::fetch('v:s') === "héllo\0x", 'string append separates');
// Zero-copy: fetching a big array allocates nothing in the request.
$big = []; for ($i = 0; $i < 1000; $i++) $big["key$i"] = "value$i";
Cache::store('big', $big);
$m = memory_get_usage(); $b = Cache::fetch('big'); $used = memory_get_usage() - $m;
check($used < 200 && count($b) === 1000, "1000-element fetch allocates $used bytes");
$t = hrtime(true); for ($i = 0; $i < 2000; $i++) { $x = Cache::fetch('big'); } $tb = hrtime(true) - $t;
Cache::store('small', range(1, 10));
$t = hrtime(true); for ($i = 0; $i < 2000; $i++) { $x = Cache::fetch('small'); } $ts = hrtime(true) - $t;
check($tb < 4 * $ts + 200000, "1000-element fetch costs about a 10-element one ($tb vs $ts ns)");
// Objects: identity, cycles, visibility, readonly, enums, protocols.
class P { public $a = 1; protected $b = [1, 2]; private $c = 'pc'; public ?P $self = null; public readonly int $r; function __construct() { $this->r = 5; } function c() { return $this->c; } function b() { return $this->b; } }
class Q extends P { private $c = 'qc'; function qc() { return $this->c; } }
$q = new Q; $q->self = $q; $q->a = [new stdClass];
Closure::bind(function () { $this->c = 'pc!'; $this->b = [3]; }, $q, P::class)();
Closure::bind(function () { $this->c = 'qc!'; }, $q, Q::class)();
Cache::store('obj', ['one' => $q, 'two' => $q]);
$o = Cache::fetch('obj');
check($o['one'] instanceof Q && $o['one'] === $o['two'] && $o['one']->self === $o['one'], 'object identity and cycle');
check($o['one']->c() === 'pc!' && $o['one']->qc() === 'qc!' && $o['one']->b() === [3] && $o['one']->r === 5, 'private/protected/readonly properties');
check(Cache::fetch('obj')['one'] !== $o['one'], 'objects are rebuilt per fetch');
enum Suit: string { case Hearts = 'H'; case Spades = 'S'; }
Cache::store('enum', ['s' => Suit::Spades, 'l' => [Suit::Hearts]]);
check(Cache::fetch('enum')['s'] === Suit::Spades && Cache::fetch('enum')['l'][0] === Suit::Hearts, 'enums');
class Sl { public $x = 1; public $y = 'y'; function __sleep() { return ['x']; } function __wakeup() { $this->y = 'woke'; } }
Cache::store('sleep', new Sl); check(Cache::fetch('sleep')->y === 'woke', '__sleep/__wakeup');
class Us { public $d = 0; function __serialize(): array { return ['d' => 7]; } function __unserialize(array $a): void { $this->d = $a['d'] * 2; } }
Cache::store('ser', [new Us]); check(Cache::fetch('ser')[0]->d === 14, '__serialize/__unserialize');
class Sz implements Serializable { public $v = 3; function serialize() { return 'abc'; } function unserialize($d) { $this->v = $d; } function __serialize(): array { return ['v' => 'new']; } function __unserialize(array $a): void { $this->v = $a['v']; } }
Cache::store('szl', new Sz); check(Cache::fetch('szl')->v === 'new', 'Serializable with __serialize');
Cache::store('dt', new DateTimeImmutable('2020-02-03 UTC')); check(Cache::fetch('dt')->format('Y-m-d') === '2020-02-03', 'internal class with a protocol');
$std = new stdClass; $std->a = 1; $std->{'0'} = 'zero'; Cache::store('std', $std); check(Cache::fetch('std') == $std, 'stdClass');
// Refused values name the path.
check(throws(fn() => Cache::store('bad', ['a' => [0, 1, 2, (object)['b' => fn() => 1]]]), UserCache\Exception::class, "\$value['a'][3]->b"), 'closure refused with path');
check(throws(fn() => Cache::store('bad', ['r' => fopen('php://memory', 'r')]), UserCache\Exception::class, "resource at \$value['r']"), 'resource refused with path');
check(throws(fn() => Cache::store('bad', (function () { yield 1; })()), UserCache\Exception::class, 'Generator'), 'generator refused');
check(!Cache::exists('bad'), 'nothing stored on refusal');
// References keep their aliasing (stored through serialize(), as APCu does), cycles too.
$x = 1; check(Cache::store('refs', [&$x, &$x]), 'aliased references stored');
$r = Cache::fetch('refs'); $r[0] = 5; check($r[1] === 5, 'aliasing kept');
$a = [1]; $a[] = &$a; check(Cache::store('cycle', $a), 'self-referencing array stored');
$c = Cache::fetch('cycle'); check($c[1][1][1][0] === 1, 'cycle kept');
// Argument errors.
check(throws(fn() => Cache::store('', 1), ValueError::class, 'must not be empty'), 'empty key');
check(throws(fn() => Cache::fetch(str_repeat('k', 4097)), ValueError::class, '4096'), 'long key');
check(Cache::store(str_repeat('k', 4096), 1), '4096-byte key accepted');
check(throws(fn() => Cache::store('k', 1, -1), ValueError::class, 'greater than or equal to 0'), 'negative ttl');
check(throws(fn() => Cache::store([], 1), TypeError::class), 'array key');
check(throws(fn() => Cache::fetch(12), TypeError::class), 'int key under strict_types');
check(throws(fn() => Cache::fetch(), ArgumentCountError::class), 'fetch without a key');
check(throws(fn() => Cache::fetch('a', 1, $f, 4), ArgumentCountError::class), 'fetch with four arguments');
check(Cache::fetch('absent', 'dflt', $miss) === 'dflt' && $miss === false, 'miss returns the default and sets $found');
check(Cache::fetch('absent') === null, 'miss without a default is null');
$x = 5; $mixed = ['a' => &$x, 3 => 1.5, 'n' => null, 't' => true, 's' => "s\0"]; $holes = [0 => 'z', 5 => 'y'];
$ints = [-1 => 'neg', 7 => 'seven', 0 => 'zero'];
Cache::store('mixed', $mixed); Cache::store('holes', $holes); Cache::store('ints', $ints); $x = 6;
check(Cache::fetch('mixed') === ['a' => 5, 3 => 1.5, 'n' => null, 't' => true, 's' => "s\0"], 'flat array with a reference and mixed keys');
check(Cache::fetch('holes') === $holes && !array_is_list(Cache::fetch('holes')), 'flat array with holes');
check(Cache::fetch('ints') === $ints && array_keys(Cache::fetch('ints')) === [-1, 7, 0], 'int keys keep their order');
$h = Cache::fetch('holes'); $h[] = 'next'; check(array_key_last($h) === 6, 'next index after a fetched array with holes');
check(throws(fn() => Cache::increment('k', 'x'), TypeError::class), 'non-int step');
check(throws(fn() => Cache::delete(1.5), TypeError::class), 'delete float');
check(throws(fn() => Cache::remember('k', 'no_such_function'), TypeError::class), 'remember non-callable');
check(throws(fn() => Cache::fetchMultiple([[1]]), TypeError::class), 'fetchMultiple non-string key');
// add / exists / delete / multiple.
check(Cache::add('ad', 1) && !Cache::add('ad', 2) && Cache::fetch('ad') === 1, 'add only when absent');
check(Cache::exists('ad') && Cache::delete('ad') && !Cache::exists('ad') && !Cache::delete('ad'), 'exists/delete');
check(Cache::storeMultiple(['m1' => 1, 'm2' => [2], 7 => 'seven']) === [], 'storeMultiple');
check(Cache::fetchMultiple(['m2', 'none', 7, 'm1']) === ['m2' => [2], 7 => 'seven', 'm1' => 1], 'fetchMultiple order and found keys only');
check(Cache::delete(['m1', 'nope']) === ['nope'], 'delete array returns missing keys');
// Counters.
check(Cache::increment('c') === 1 && Cache::increment('c', 5) === 6 && Cache::decrement('c', 2) === 4, 'increment/decrement');
check(Cache::cas('c', 4, 10) && !Cache::cas('c', 4, 11) && Cache::fetch('c') === 10, 'cas');
Cache::store('notint', 'x'); check(Cache::increment('notint') === false && !Cache::cas('notint', 0, 1), 'increment of a non-int');
// TTL.
Cache::store('ttl', 'v', 1); check(Cache::fetch('ttl') === 'v', 'ttl before expiry');
// remember.
$calls = 0;
check(Cache::remember('rem', function () use (&$calls) { $calls++; return ['v' => 1]; }) === ['v' => 1], 'remember produces');
check(Cache::remember('rem', function () use (&$calls) { $calls++; return 2; }) === ['v' => 1] && $calls === 1, 'remember reuses');
check(throws(fn() => Cache::remember('rem2', function () { throw new LogicException('boom'); }), LogicException::class, 'boom') && !Cache::exists('rem2'), 'remember producer exception');
check(throws(fn() => Cache::remember('rem3', fn() => Cache::remember('rem3', fn() => 1)), UserCache\Exception::class, 'same key'), 'recursive remember');
// info.
$info = Cache::info();
foreach (['entries', 'memory_used', 'memory_limit', 'hits', 'misses', 'evictions', 'retired_bytes'] as $k) check(isset($info[$k]), "info[$k]");
check($info['memory_used'] <= $info['memory_limit'] && $info['hits'] > 0 && $info['misses'] > 0, 'info values');
// apcu_* compatibility (APCu itself is not loaded here).
check(function_exists('apcu_fetch') && apcu_store('ap', [1, 2]) && apcu_fetch('ap') === [1, 2] && Cache::fetch('ap') === [1, 2], 'apcu_store/fetch share the cache');
check(apcu_fetch('nope', $ok) === false && $ok === false, 'apcu_fetch miss');
check(apcu_fetch(['ap', 'nope']) === ['ap' => [1, 2]], 'apcu_fetch array');
check(apcu_add('ap', 3) === false && apcu_exists('ap') && apcu_delete('ap') && !apcu_exists('ap'), 'apcu_add/exists/delete');
check(apcu_inc('ai') === 1 && apcu_inc('ai', 2, $ok) === 3 && $ok && apcu_dec('ai') === 2 && apcu_cas('ai', 2, 5), 'apcu_inc/dec/cas');
check(apcu_entry('ae', fn($k) => "v:$k") === 'v:ae' && apcu_entry('ae', fn($k) => 'other') === 'v:ae', 'apcu_entry');
check(apcu_store(['b1' => 1, 'b2' => 2]) === [] && apcu_fetch('b2') === 2, 'apcu_store array');
check(is_array(apcu_cache_info()) && apcu_enabled(), 'apcu_cache_info/enabled');
check(Cache::clear() && Cache::info()['entries'] === 0 && !Cache::exists('arr'), 'clear');
check($got['a'][0] === 1 && $b['key999'] === 'value999', 'values fetched before clear stay valid');
echo "DONE $n checks\n";
