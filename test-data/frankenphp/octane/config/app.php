<?php
return [
    'name' => 'octane-fixture',
    'env' => 'testing',
    'debug' => ($_SERVER['APP_DEBUG'] ?? '') === 'true',
    'url' => 'http://localhost',
    'timezone' => 'UTC',
    'locale' => 'en',
    'key' => 'base64:' . base64_encode(str_repeat('k', 32)),
    'cipher' => 'AES-256-CBC',
    'providers' => [OctaneFixture\RouteProvider::class],
    'aliases' => [],
];
