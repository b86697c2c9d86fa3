<?php
// Worker mode: trace_shapes() per request, with a span object kept across requests.
require __DIR__ . '/trace_shapes.php';

$kept = null;
$handler = static function () use (&$kept): void {
    $limits = array_map('intval', array_intersect_key($_GET, array_flip(['spans', 'attributes', 'events', 'event_attributes'])));
    echo json_encode(trace_shapes((int) ($_GET['seed'] ?? 1), $limits, $kept));
};
while (ferrophp_handle_request($handler)) {
}
