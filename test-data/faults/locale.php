<?php
// ?set=NAME: setlocale(LC_ALL, NAME) first. ?ms=: sleep, then report the locale this
// request sees (so a concurrent request can change its own meanwhile).
$set = isset($_GET['set']) ? setlocale(LC_ALL, $_GET['set']) : null;
usleep((int) ($_GET['ms'] ?? 0) * 1000);
header('Content-Type: application/json');
echo json_encode([
    'set' => $set,
    'all' => setlocale(LC_ALL, '0'),
    'numeric' => setlocale(LC_NUMERIC, '0'),
    'decimal' => localeconv()['decimal_point'],
    'printf' => sprintf('%.2f', 1.5),
    'upper' => strtoupper("\u{e4}b"),
    'roundtrip' => setlocale(LC_ALL, setlocale(LC_ALL, '0')) === setlocale(LC_ALL, '0'),
]);
