<?php
// 103 Early Hints (TestEarlyHints): headers_send(103) sends the Link header (and the
// others set so far) as an informational response; the final response drops Link.
require_once __DIR__ . '/_serve.php';

serve(static function (): void {
    header('Link: </style.css>; rel=preload; as=style');
    header('Request: ' . ($_GET['i'] ?? ''));
    $sent = headers_send(103);
    header_remove('Link');
    usleep((int) ($_GET['ms'] ?? 0) * 1000); // the hint is already on its way
    echo "Hello $sent";
});
