<?php
// The front controller of FrankenPHP's php_server cases (TestPHPServerDirective,
// TestPHPServerGlobals, TestWorkerPHPServerGlobals): the path variables it was given,
// one per line, after a greeting. Classic or worker (see ../../dual/_serve.php).
require_once __DIR__ . '/../../dual/_serve.php';

serve(static function (): void {
    echo 'Front controller (', $_GET['i'] ?? 'i not set', ")\n";
    foreach (['SCRIPT_NAME', 'SCRIPT_FILENAME', 'PHP_SELF', 'PATH_INFO', 'DOCUMENT_ROOT', 'DOCUMENT_URI', 'REQUEST_URI'] as $name) {
        echo $name, ': ', $_SERVER[$name] ?? '', "\n";
    }
});
