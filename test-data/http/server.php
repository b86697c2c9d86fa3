<?php
// Dumps $_SERVER and getenv() of one variable (?env=NAME, default FERRO_TEST_ENV) as JSON.
header('Content-Type: application/json');
$name = $_GET['env'] ?? 'FERRO_TEST_ENV';
$value = getenv($name);
echo json_encode([
    'server' => $_SERVER,
    'getenv' => $value === false ? null : $value,
    'env_superglobal' => $_ENV[$name] ?? null,
]);
