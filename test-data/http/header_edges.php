<?php
// Response header lines PHP accepts but HTTP does not, a script's own Content-Length,
// repeated names interleaved with others, and (?many=N) more lines than a response holds.
if (isset($_GET['many'])) {
    for ($i = 0; $i < (int) $_GET['many']; $i++) {
        header("X-N$i: v", false);
    }
    echo 'many';
    return;
}
header('X-First: 1');
header('Content-Length: 999');
header('Set-Cookie: a=1', false);
header('Bad Name: dropped');
header("X-Bad-Value: a\x01b");
header('X-Middle: m');
header('Set-Cookie: b=2', false);
header('X-Last: z');
header('Content-Type: text/plain');
if (isset($_GET['stream'])) {
    // Flushed: the response streams, and the script's Content-Length frames it.
    header('Content-Length: 8');
    echo 'streamed';
    flush();
    return;
}
echo 'complete';
