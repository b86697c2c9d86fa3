<?php
// Streams until the client goes away (at most 10 s). With ?ignore=1 the script keeps
// running after the abort and records connection_aborted() in ?marker=; without it, PHP
// stops the script at the first failed write and the marker is never written.
// ?flush=1 (default): small echoes each followed by ob_flush()/flush(), so the disconnect
// is first noticed by a flush; ?flush=0: large echoes (over the server's 64 KiB stream
// threshold) without flushing, so it is first noticed by a write.
ignore_user_abort(!empty($_GET['ignore']));
$marker = $_GET['marker'];
$flush = ($_GET['flush'] ?? '1') === '1';
$deadline = microtime(true) + 10;
$chunk = str_repeat('.', $flush ? 8191 : 70000) . "\n";
while (microtime(true) < $deadline) {
    echo $chunk;
    if ($flush) {
        if (ob_get_level() > 0) {
            ob_flush();
        }
        flush();
    }
    if (connection_aborted()) {
        file_put_contents($marker, 'aborted=' . connection_aborted() . ' status=' . connection_status());
        exit;
    }
    usleep(10000);
}
file_put_contents($marker, 'loop ended aborted=' . connection_aborted());
