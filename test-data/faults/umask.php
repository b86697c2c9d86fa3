<?php
// ?set=OCTAL: umask(OCTAL) first (never restored by the page). ?ms=: sleep. ?file=PATH:
// then create PATH with mode 0666 and report the permissions it got.
$old = isset($_GET['set']) ? umask(octdec($_GET['set'])) : null;
usleep((int) ($_GET['ms'] ?? 0) * 1000);
$mode = null;
if (isset($_GET['file'])) {
    file_put_contents($_GET['file'], 'x');
    clearstatcache();
    $mode = decoct(fileperms($_GET['file']) & 0777);
}
header('Content-Type: application/json');
echo json_encode(['old' => $old === null ? null : decoct($old), 'umask' => decoct(umask()), 'mode' => $mode]);
