<?php
// Real APCu consumers on top of ferrophp's apcu_* layer (APCu itself not loaded):
// Symfony 5.4's ApcuAdapter (Debian's php-symfony-cache) and Composer's
// ClassLoader::setApcuPrefix() (Debian's composer). classic.php and worker.php answer
// with apcu_consumer_run($_GET) as JSON; server/tests/apcu_consumers.rs drives them.

require_once '/usr/share/php/Symfony/Component/Cache/autoload.php';
require_once '/usr/share/php/Composer/Autoload/ClassLoader.php';

use Symfony\Component\Cache\Adapter\ApcuAdapter;

function apcu_consumer_adapter(): ApcuAdapter
{
    // A version string makes the adapter clear its namespace (through APCUIterator) the
    // first time it sees the version.
    return new ApcuAdapter('ferrophp', 0, 'v1');
}

function apcu_consumer_run(array $q): array
{
    $op = $q['op'] ?? '';
    switch ($op) {
        case 'ini':
            return [
                'apc.enabled' => ini_get('apc.enabled'),
                'apc.enable_cli' => ini_get('apc.enable_cli'),
                'apc.shm_size' => ini_get('apc.shm_size'),
                'apc.serializer' => ini_get('apc.serializer'),
                'iterator' => class_exists(APCUIterator::class, false),
                'ITER_KEY' => defined('APC_ITER_KEY') ? APC_ITER_KEY : null,
                'supported' => ApcuAdapter::isSupported(),
            ];
        case 'symfony_save':
            $cache = apcu_consumer_adapter();
            $item = $cache->getItem($q['key']);
            $item->set(['n' => $q['val'], 'list' => [1, 2, 3], 'obj' => (object) ['a' => 1]]);
            $saved = $cache->save($item);
            apcu_store('unrelated', 'kept');
            return ['supported' => ApcuAdapter::isSupported(), 'saved' => $saved];
        case 'symfony_get':
            $item = apcu_consumer_adapter()->getItem($q['key']);
            $v = $item->get();
            return [
                'hit' => $item->isHit(),
                'n' => $v['n'] ?? null,
                'list' => $v['list'] ?? null,
                'obj_a' => isset($v['obj']) ? $v['obj']->a : null,
            ];
        case 'symfony_clear':
            $cleared = apcu_consumer_adapter()->clear();
            return ['cleared' => $cleared, 'unrelated' => apcu_fetch('unrelated')];
        case 'composer':
            $prefix = 'ferrophp-cl:';
            $loader = new Composer\Autoload\ClassLoader();
            $loader->addPsr4('ApcuFixture\\', __DIR__ . '/src/ApcuFixture');
            $loader->setApcuPrefix($prefix);
            $before = apcu_fetch($prefix . 'ApcuFixture\\Hello');
            $loader->register();
            $hello = class_exists('ApcuFixture\\Hello') ? (new ApcuFixture\Hello())->hi() : null;
            $missing = class_exists('ApcuFixture\\Missing');
            $loader->unregister();
            return [
                'prefix' => $loader->getApcuPrefix(),
                'before' => $before,
                'after' => apcu_fetch($prefix . 'ApcuFixture\\Hello'),
                'missing' => $missing,
                'missing_cached' => apcu_exists($prefix . 'ApcuFixture\\Missing'),
                'hello' => $hello,
                'file' => realpath(__DIR__ . '/src/ApcuFixture/Hello.php'),
            ];
        case 'entry':
            // apcu_entry under concurrency: one producer runs, the others wait for its value.
            $k = 'entry:' . $q['key'];
            $v = apcu_entry($k, function (string $key) {
                apcu_inc("runs:$key");
                usleep(400_000);
                return "made:$key:" . bin2hex(random_bytes(6));
            });
            return ['value' => $v, 'runs' => apcu_fetch("runs:$k")];
    }
    return ['error' => "unknown op '$op'"];
}
