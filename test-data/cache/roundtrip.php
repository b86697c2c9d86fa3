<?php
// Randomised freeze -> fetch -> compare for the shared cache (issue 11).
//
//   ferrophp php-cli -d apc.enable_cli=1 roundtrip.php SEED SECONDS [MAX_VALUES]
//
// Generates values from SEED (nesting, int and string keys, holes, references, objects
// with declared/typed/dynamic/private properties, cycles, enums, custom serialization,
// strings of 0 bytes to 1 MiB with many just around every chunk boundary of the string
// arena, repeated strings for the dedup map), stores each through UserCache\Cache and
// apcu_*, fetches it back zero-copy, as a copy and through fetchMultiple, and compares
// serialize() of what came back with serialize() of the original: references inside the
// value keep their aliasing (R:N), as in APCu. Keys are reused, so blocks are overwritten and reclaimed
// while values fetched earlier are still held; those are checked again at the end.
// Prints one summary line; exits 1 on the first mismatch with the seed and value index.
use UserCache\Cache;

enum RtSuit { case Hearts; case Spades; }
enum RtCode: string { case Ok = 'ok'; case Gone = 'gone'; }

#[AllowDynamicProperties]
class RtPoint {
    public int $x = 0;
    public ?string $label = null;
    protected array $tags = [];
    private float $weight = 1.5;
    public int $unset;           // typed without default: stays uninitialised
    public $free;
    public function set(array $tags, float $w): static { $this->tags = $tags; $this->weight = $w; return $this; }
}
class RtChild extends RtPoint { private string $secret = 's'; public $more = null; }
class RtWide { // more declared properties than the slot fast path takes
    public $p0, $p1, $p2, $p3, $p4, $p5, $p6, $p7, $p8, $p9, $p10, $p11, $p12, $p13, $p14, $p15, $p16, $p17;
}
class RtSer {
    public function __construct(public array $data = []) {}
    public function __serialize(): array { return ['d' => $this->data]; }
    public function __unserialize(array $a): void { $this->data = $a['d']; }
}
class RtSleep {
    public $keep = 1; public $drop = 2;
    public function __sleep(): array { return ['keep']; }
}

final class Gen {
    private const EDGES = [0, 1, 7, 8, 15, 16, 24, 39, 40, 63, 64, 65, 487, 488, 496, 505, 512,
        600, 1000, 1024, 2000, 2048, 4096, 8192, 16384, 32743, 32744, 32768, 65512, 65536, 131072];
    public int $strings = 0;
    public int $bytes = 0;
    /** Inside an object's properties: plain() cannot break references there. */
    private int $inObject = 0;
    private array $pool = [];
    public function __construct(private int $budget) {}

    public function len(): int {
        $r = mt_rand(0, 99);
        if ($r < 40) {
            $l = self::EDGES[mt_rand(0, count(self::EDGES) - 1)] + mt_rand(-9, 9);
        } elseif ($r < 75) {
            $l = mt_rand(0, 70);
        } elseif ($r < 97) {
            $l = mt_rand(0, 6000);
        } else {
            $l = (1 << 20) + mt_rand(-40, 40);
        }
        return max(0, min($l, $this->budget));
    }

    public function str(): string {
        if ($this->pool && mt_rand(0, 3) === 0) {
            return $this->pool[mt_rand(0, count($this->pool) - 1)]; // repeated: dedup
        }
        $l = $this->len();
        $this->budget -= $l;
        $this->strings++;
        $this->bytes += $l;
        $s = match (mt_rand(0, 3)) {
            0 => str_repeat(chr(mt_rand(0, 255)), $l),
            1 => $l ? random_bytes($l) : '',
            2 => substr(str_repeat(dechex(mt_rand()) . "\0é", intdiv($l, 10) + 1), 0, $l),
            default => (string)mt_rand(-1000, 1000), // numeric strings (become int keys)
        };
        if (strlen($s) <= 80 && count($this->pool) < 64) {
            $this->pool[] = $s;
        }
        return $s;
    }

    public function key(): int|string {
        return match (mt_rand(0, 4)) {
            0 => mt_rand(-5, 40),
            1 => [PHP_INT_MAX, PHP_INT_MIN, 0, -1][mt_rand(0, 3)],
            default => $this->str(),
        };
    }

    public function value(int $depth, array &$objects): mixed {
        $r = mt_rand(0, $depth > 4 ? 60 : 99);
        return match (true) {
            $r < 4 => null,
            $r < 8 => (bool)mt_rand(0, 1),
            $r < 14 => [0, 1, -1, PHP_INT_MAX, PHP_INT_MIN, mt_rand()][mt_rand(0, 5)],
            $r < 18 => [0.0, -0.0, 1.5, NAN, INF, -INF, PHP_FLOAT_EPSILON, mt_rand() / 7][mt_rand(0, 7)],
            $r < 50 => $this->str(),
            $r < 62 => RtSuit::Spades,
            $r < 82 => $this->arr($depth + 1, $objects),
            default => $this->obj($depth + 1, $objects),
        };
    }

    public function arr(int $depth, array &$objects): array {
        $n = match (mt_rand(0, 9)) {
            0 => 0,
            9 => mt_rand(60, 300),
            default => mt_rand(1, 8),
        };
        if ($this->budget <= 0) {
            $n = min($n, 2);
        }
        $a = [];
        $shape = mt_rand(0, 2);
        for ($i = 0; $i < $n; $i++) {
            $v = ($n > 50 && mt_rand(0, 3)) ? $this->str() : $this->value($depth, $objects);
            if ($shape === 0) {
                $a[] = $v;                          // list
            } else {
                $a[$shape === 1 ? $this->str() : $this->key()] = $v;
            }
        }
        if ($a && mt_rand(0, 4) === 0) {            // holes
            foreach ((array)array_rand($a, max(1, intdiv(count($a), 3))) as $k) {
                unset($a[$k]);
            }
        }
        if (!$this->inObject && count($a) >= 2 && mt_rand(0, 4) === 0) { // references
            $keys = array_keys($a);
            $a[$keys[0]] = &$a[$keys[count($keys) - 1]];
        }
        return $a;
    }

    public function obj(int $depth, array &$objects): object {
        if ($objects && mt_rand(0, 4) === 0) {
            return $objects[mt_rand(0, count($objects) - 1)]; // identity shared in the value
        }
        $this->inObject++;
        $o = $this->newObject($depth, $objects);
        $this->inObject--;
        if (!$o instanceof UnitEnum) {
            $objects[] = $o;
        }
        return $o;
    }

    private function newObject(int $depth, array &$objects): object {
        switch (mt_rand(0, 7)) {
            case 0:
                $o = new stdClass();
                for ($i = mt_rand(0, 5); $i > 0; $i--) {
                    $o->{'p' . $this->str()} = $this->value($depth, $objects);
                }
                break;
            case 1:
            case 2:
                $o = mt_rand(0, 1) ? new RtPoint() : new RtChild();
                $o->x = mt_rand();
                $o->label = mt_rand(0, 1) ? $this->str() : null;
                $o->free = $this->value($depth, $objects);
                $o->set([$this->str() => $this->str()], mt_rand() / 3);
                if (mt_rand(0, 2) === 0) {
                    $o->unset = 5;
                }
                if (mt_rand(0, 3) === 0) {
                    $o->{'dyn' . mt_rand(0, 9)} = $this->str(); // dynamic beside declared
                }
                break;
            case 3:
                $o = new RtWide();
                foreach (get_object_vars($o) as $p => $_) {
                    $o->$p = mt_rand(0, 1) ? $this->str() : mt_rand();
                }
                break;
            case 4:
                $o = new RtSer([$this->str(), $this->value($depth, $objects)]);
                break;
            case 5:
                $o = new RtSleep();
                $o->keep = $this->str();
                $o->drop = 'never stored';
                break;
            case 6:
                return RtCode::Gone;
            default:
                $o = new stdClass();
                $o->self = $o;                      // cycle
                $o->name = $this->str();
        }
        return $o;
    }
}

/** The comparable form: serialize(), which writes references inside the value as R:N
 *  back-references, so two slots sharing one reference must still share it after the
 *  round trip (issue 13: APCu keeps that aliasing, and so does the cache). */
function expected(mixed $v): string {
    return serialize($v);
}

$seed = (int)($argv[1] ?? 1);
$seconds = (float)($argv[2] ?? 5);
$maxValues = (int)($argv[3] ?? PHP_INT_MAX);
mt_srand($seed);
$end = microtime(true) + $seconds;
$checked = 0;
$strings = 0;
$bytes = 0;
$refused = 0;
$held = [];

function fail(string $what, int $seed, int $i, string $want, string $got): never {
    $at = strspn($want ^ $got, "\0");               // first differing byte
    $show = fn(string $s) => addcslashes(substr($s, max(0, $at - 120), 240), "\0..\37\177..\377");
    fwrite(STDERR, "MISMATCH ($what) seed=$seed value=$i at byte $at of " . strlen($want) . '/' . strlen($got)
        . "\nwant: " . $show($want) . "\n got: " . $show($got) . "\n");
    exit(1);
}

// The regression of issue 11, first: a dedicated first string, then strings of 600..8000
// bytes that used to be carved out of a 512-byte chunk.
for ($i = 0; $i < 200; $i++) {
    Cache::store("k$i", ['a' => 'x', 'b' => str_repeat('y', 600 + $i * 37), 'c' => str_repeat('z', 3000)]);
}
for ($i = 0; $i < 200; $i++) {
    $v = Cache::fetch("k$i");
    if (strlen($v['b']) !== 600 + $i * 37 || $v['c'] !== str_repeat('z', 3000) || $v['a'] !== 'x') {
        fail('issue 11 repro', $seed, $i, '', json_encode(array_map('strlen', $v)));
    }
}

for ($i = 0; $i < $maxValues && microtime(true) < $end; $i++) {
    $gen = new Gen(mt_rand(0, 9) ? 200_000 : 3_000_000);
    $objects = [];
    $v = mt_rand(0, 5) ? $gen->arr(0, $objects) : $gen->value(0, $objects);
    $want = expected($v);
    $key = 'rt' . mt_rand(0, 15);
    Cache::store($key, $v);
    $got = Cache::fetch($key);
    if (expected($got) !== $want) {
        fail('fetch', $seed, $i, $want, serialize($got));
    }
    $copy = Cache::fetchCopy($key);
    if (expected($copy) !== $want) {
        fail('fetchCopy', $seed, $i, $want, serialize($copy));
    }
    $multi = Cache::fetchMultiple([$key, 'absent']);
    if (expected($multi[$key] ?? null) !== $want || array_key_exists('absent', $multi)) {
        fail('fetchMultiple', $seed, $i, $want, serialize($multi));
    }
    if (is_array($got)) {                        // writing to what we fetched separates it
        $got['written'] = 1;
        if (expected(Cache::fetch($key)) !== $want) {
            fail('after write', $seed, $i, $want, serialize(Cache::fetch($key)));
        }
        unset($got['written']);
    }
    apcu_store("apcu:$key", $v);
    $viaApcu = apcu_fetch("apcu:$key");
    if (expected($viaApcu) !== $want) {
        fail('apcu_fetch', $seed, $i, $want, serialize($viaApcu));
    }
    // Mutating the original after the store must not reach the cache.
    if (is_array($v)) {
        $v["\0after"] = "after";
        if (expected(Cache::fetch($key)) !== $want) {
            fail('original mutated', $seed, $i, $want, serialize(Cache::fetch($key)));
        }
    }
    // Hold some fetched values while their keys are overwritten and their blocks retired.
    if (mt_rand(0, 3) === 0) {
        $held[] = [$got, $want, $i];
        if (count($held) > 40) {
            array_shift($held);
        }
    }
    // Values that must be refused, with the server unharmed.
    if (mt_rand(0, 30) === 0) {
        $bad = mt_rand(0, 2) ? [1, 'x' => [fn() => 1]] : ['f' => fopen('php://memory', 'r')];
        try {
            Cache::store('bad', $bad);
            fail('refusal', $seed, $i, 'an exception', 'stored');
        } catch (UserCache\Exception) {
            $refused++;
        }
        // A self-referencing array is stored (through serialize(), as APCu stores it)
        // and comes back with its cycle.
        $self = [1];
        $self[] = &$self;
        Cache::store('self', $self);
        $back = Cache::fetch('self');
        if (!is_array($back) || ($back[1][1][1][0] ?? null) !== 1) {
            fail('recursion', $seed, $i, serialize($self), serialize($back));
        }
        $back[1][0] = 2;                            // the cycle is one array, aliased
        if ($back[1][1][0] !== 2) {
            fail('recursion aliasing', $seed, $i, 'aliased', serialize($back));
        }
    }
    $checked++;
    $strings += $gen->strings;
    $bytes += $gen->bytes;
}
foreach ($held as [$got, $want, $i]) {
    if (expected($got) !== $want) {
        fail('held after overwrite', $seed, $i, $want, serialize($got));
    }
}
printf("roundtrip: seed %d checked %d values (%d strings, %d string bytes, %d refusals) OK\n",
    $seed, $checked, $strings, $bytes, $refused);
