<?php
// An ini value as the engine sees it: `KEY:VALUE` (TestEnvVarsInPhpIni, TestPHPIniConfiguration).
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    $key = $_GET['key'] ?? 'memory_limit';
    echo $key, ':', ini_get($key);
});
