<?php
// Edge cases of the apcu_* API, compared differentially: scripts/apcu-suite.sh runs this
// file with the real APCu (our bin/php, apc.serializer=default) and with our layer
// (ferrophp php-cli), and server/tests/apcu_suite.rs requires the same output.
// Left out on purpose (docs/apcu-compat.md): numeric-string keys of array results
// (APCu's #247) and invalid APCUIterator arguments (fatal errors in APCu, warnings here).
function t(string $label, callable $f) {
    set_error_handler(function ($no, $msg) { echo "  warning: $msg\n"; return true; });
    try { $r = $f(); echo "$label: "; var_export($r); echo "\n"; }
    catch (Throwable $e) { echo "$label: ", get_class($e), ": ", $e->getMessage(), "\n"; }
    restore_error_handler();
}
t('closure', fn() => apcu_store('c', fn() => 1));
t('closure nested', fn() => apcu_store('c', ['a' => [fn() => 1]]));
t('closure exists', fn() => apcu_exists('c'));
t('generator', fn() => apcu_store('g', (function () { yield 1; })()));
t('resource', fn() => apcu_store('r', STDIN));
t('resource nested', fn() => apcu_store('r', ['x' => [STDIN]]));
t('resource + refs', function () { $x = 1; return apcu_store('rr', [&$x, &$x, STDIN]); });
t('resource + refs fetch', fn() => apcu_fetch('rr'));
t('ArrayObject', function () { apcu_store('ao', new ArrayObject([1, 2])); return apcu_fetch('ao'); });
t('SplFixedArray', function () { $a = SplFixedArray::fromArray([1, 2]); return apcu_store('sf', $a) ? apcu_fetch('sf')->toArray() : 'no'; });
t('DateTime', function () { apcu_store('dt', new DateTime('2020-01-01 00:00:00 UTC')); return apcu_fetch('dt')->format('c'); });
t('enum-like stdClass cycle', function () { $o = new stdClass; $o->self = $o; apcu_store('o', $o); $b = apcu_fetch('o'); return $b->self === $b; });
t('inc non-int', function () { apcu_store('s', 'str'); return apcu_inc('s'); });
t('inc float', function () { apcu_store('f', 1.5); return apcu_inc('f'); });
t('inc missing', function () { apcu_delete('m'); return [apcu_inc('m', 5), apcu_fetch('m')]; });
t('cas missing', function () { apcu_delete('cm'); return [apcu_cas('cm', 0, 3), apcu_fetch('cm')]; });
t('dec overflow', function () { apcu_store('o1', PHP_INT_MIN); return apcu_dec('o1'); });
t('add existing', function () { apcu_store('e', 1); return [apcu_add('e', 2), apcu_fetch('e')]; });
t('add array', function () { apcu_store('e', 1); return apcu_add(['e' => 2, 'new' => 3]); });
t('store null', function () { return [apcu_store('n', null), apcu_fetch('n', $ok), $ok]; });
t('store false', function () { return [apcu_store('fa', false), apcu_fetch('fa', $ok), $ok]; });
t('negative ttl', fn() => [apcu_store('nt', 1, -5), apcu_fetch('nt')]);
t('delete int key array', fn() => apcu_delete([1, 'nope']));
t('delete null', fn() => apcu_delete(null));
t('exists mixed array', fn() => apcu_exists(['e', 5, null]));
t('fetch nested array keys', fn() => apcu_fetch([['x']]));
t('entry non-callable', fn() => apcu_entry('en', 'not_a_function'));
t('entry returns resource', fn() => apcu_entry('er', fn() => STDIN));
t('entry exists after', fn() => apcu_exists('er'));
t('key_info missing', fn() => apcu_key_info('zzz'));
t('store no value', fn() => apcu_store('nv'));
t('store object key', fn() => apcu_store(new stdClass, 1));
t('iterator bad list', fn() => iterator_count(new APCUIterator(null, APC_ITER_ALL, 0, 7)));
t('neg ttl add', fn() => [apcu_add('na', 1, -1), apcu_add('na', 2), apcu_fetch('na')]);
t('iterator clone', fn() => clone new APCUIterator());
t('serialize iterator', fn() => serialize(new APCUIterator()));
t('typed props', function () { $o = new class { public int $a = 1; public ?array $b = null; }; apcu_store('tp', $o); return get_object_vars(apcu_fetch('tp')); });
t('entry nested same key', fn() => [apcu_entry('nx', fn() => apcu_entry('nx', fn() => 1) + 1), apcu_fetch('nx')]);
t('entry throws', fn() => apcu_entry('ny', function () { throw new RuntimeException('boom'); }));
t('entry after throw', fn() => apcu_exists('ny'));
t('entry ttl', fn() => [apcu_entry('nz', fn($k) => "key was $k", 100), apcu_key_info('nz')['ttl']]);
t('entry existing', function () { apcu_store('nw', 'old'); return apcu_entry('nw', fn() => 'new'); });
