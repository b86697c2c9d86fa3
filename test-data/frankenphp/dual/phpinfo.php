<?php
// phpinfo() inside a request (TestPhpInfo): it names the SAPI and shows this request's query.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    phpinfo();
});
