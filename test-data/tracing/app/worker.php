<?php
// Worker mode: the same scripts run inside the handler (by PATH_INFO), and `keep` holds a
// span in the worker's state across requests.
use Ferrophp\Trace;

$kept = null;
$handler = static function () use (&$kept): void {
    $name = trim($_SERVER['PATH_INFO'] ?? '', '/');
    if ($name === 'keep') {
        // A span of an earlier request: no longer recording; end() does nothing.
        $before = $kept === null ? null : [
            'recording' => $kept->isRecording(),
            'id' => $kept->spanId(),
        ];
        $kept?->setAttribute('late', true)->end();
        $kept = Trace::span('kept');
        echo json_encode(['before' => $before, 'now' => $kept->spanId()]);
        return;
    }
    include __DIR__ . "/$name.php";
};
while (ferrophp_handle_request($handler)) {
}
