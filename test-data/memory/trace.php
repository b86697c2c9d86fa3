<?php
// Classic mode: one trace_shapes() run per request (GET ?seed=N&spans=&attributes=&events=&event_attributes=).
require __DIR__ . '/trace_shapes.php';

$limits = array_map('intval', array_intersect_key($_GET, array_flip(['spans', 'attributes', 'events', 'event_attributes'])));
$kept = null;
echo json_encode(trace_shapes((int) ($_GET['seed'] ?? 1), $limits, $kept));
