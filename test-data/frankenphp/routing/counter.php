<?php
// A worker outside the document root, reached only through its `match` pattern
// (TestWorkerMatchDirective): requests:N.
$n = 0;
while (frankenphp_handle_request(static function () use (&$n): void {
    echo 'requests:', ++$n;
})) {
}
