<?php
// Drives the per-thread setlocale() (php-sys/locale.c) with names of every awkward size
// and shape, to be run under valgrind with USE_ZEND_ALLOC=0:
//   valgrind ... ferrophp php-cli test-data/valgrind/locale_edges.php SEED ROUNDS
// Names of 0, 1, 255, 256, 4095, 4096, 65536 bytes and one past each, 1 MiB, with NUL,
// '=' and ';' inside (composite LC_ALL syntax), composite strings read back and mutated,
// arrays of candidates, the variadic form, every category, invalid categories; each
// result is checked against a fresh read of the same category.
mt_srand((int) ($argv[1] ?? 1));
$rounds = (int) ($argv[2] ?? 200);
$sizes = [0, 1, 2, 255, 256, 257, 4095, 4096, 4097, 65535, 65536, 65537, 1 << 20];
$categories = [LC_ALL, LC_CTYPE, LC_NUMERIC, LC_TIME, LC_COLLATE, LC_MONETARY, LC_MESSAGES];
$valid = ['C', 'POSIX', 'C.UTF-8', '', '0'];
$shape = static function (int $n): string {
    $pick = mt_rand(0, 4);
    return match ($pick) {
        0 => str_repeat('x', $n),
        1 => substr(str_repeat("LC_NUMERIC=C;", intdiv($n, 13) + 1), 0, $n),
        2 => $n ? str_repeat("\0", $n) : '',
        3 => substr(str_repeat('de_DE.UTF-8@euro;=', intdiv($n, 18) + 1), 0, $n),
        default => $n ? random_bytes($n) : '',
    };
};
$checked = 0;
for ($r = 0; $r < $rounds; $r++) {
    $cat = $categories[array_rand($categories)];
    $name = mt_rand(0, 2) ? $shape($sizes[array_rand($sizes)]) : $valid[array_rand($valid)];
    $form = mt_rand(0, 3);
    $result = match ($form) {
        0 => @setlocale($cat, $name),
        1 => @setlocale($cat, [$name, 'C.UTF-8']),
        2 => @setlocale($cat, $name, 'POSIX', ''),
        default => @setlocale($cat, setlocale(LC_ALL, '0')),
    };
    $now = setlocale($cat, '0');
    if ($result !== false && $result !== $now) {
        fwrite(STDERR, "round $r: setlocale returned " . var_export($result, true) . " but reads " . var_export($now, true) . "\n");
        exit(1);
    }
    // The composite name must round-trip.
    $all = setlocale(LC_ALL, '0');
    if (setlocale(LC_ALL, $all) !== $all) {
        fwrite(STDERR, "round $r: composite " . var_export($all, true) . " did not round-trip\n");
        exit(1);
    }
    $conv = localeconv();
    sprintf('%.3f', 1.25) . strtoupper('abc') . strcoll('a', 'b');
    $checked++;
    if (mt_rand(0, 7) === 0) {
        try {
            setlocale(99999, 'C');
        } catch (\ValueError) {
        }
    }
}
setlocale(LC_ALL, 'C');
echo "checked $checked rounds OK\n";
