<?php
// Drives env.rs (the per-thread putenv/getenv overlay) and the Ferrophp\Metrics FFI with
// value sizes around every edge (0, 1, 8, 64, 256, 4096, 65536 and one past each, 1 MiB).
// Run under valgrind: USE_ZEND_ALLOC=0 valgrind --error-exitcode=99 \
//   --suppressions=test-data/valgrind/php.supp target/debug/ferrophp php-cli \
//   test-data/valgrind/env_metrics_edges.php SEED
mt_srand((int)($argv[1] ?? 1));
$sizes = [0, 1, 7, 8, 9, 63, 64, 65, 255, 256, 4095, 4096, 4097, 65535, 65536, 65537, 1 << 20, (1 << 20) + 1];
$checked = 0;
for ($i = 0; $i < 3000; $i++) {
    $name = 'V' . mt_rand(0, 40);
    $len = mt_rand(0, 3) ? $sizes[array_rand($sizes)] : mt_rand(0, 5000);
    $val = str_repeat(chr(mt_rand(65, 90)), $len);
    putenv("$name=$val");
    if (getenv($name) !== $val) { echo "MISMATCH $name $len\n"; exit(1); }
    if ((getenv()[$name] ?? null) !== $val) { echo "ARRAY MISMATCH $name\n"; exit(1); }
    if (mt_rand(0, 4) === 0) { putenv($name); if (getenv($name) !== false) { echo "UNSET FAIL\n"; exit(1); } }
    try { putenv(mt_rand(0, 1) ? '' : '=x'); echo "NO ERROR\n"; exit(1); } catch (ValueError) {}
    Ferrophp\Metrics::observe('drive_value', mt_rand() / mt_getrandmax() * 10 ** mt_rand(-300, 300) * (mt_rand(0,1) ? 1 : -1), ['t' => str_repeat('x', mt_rand(0, 300))]);
    Ferrophp\Metrics::increment('drive_count', mt_rand(0, 1000));
    $checked++;
}
$q = Ferrophp\Metrics::quantile('drive_count', 0.5);
echo "checked $checked, ", count(Ferrophp\Metrics::snapshot()), " series\n";
