<?php
// Dispatches one job to the queue `work` (or ?queue=): ?op=record&n=N (the consumer
// appends N to its log), ?op=fail, ?op=fatal; ?delay= seconds, ?max= attempts.
// Prints the job's id, the dispatch time and this process's id.
$queue = $_GET['queue'] ?? 'work';
$payload = ['op' => $_GET['op'] ?? 'record', 'n' => (int)($_GET['n'] ?? 0), 'at' => microtime(true)];
try {
    $id = Ferrophp\Jobs::dispatch(
        $queue,
        $payload,
        (float)($_GET['delay'] ?? 0),
        (int)($_GET['priority'] ?? 0),
        $_GET['unique'] ?? null,
        (int)($_GET['max'] ?? 3),
    );
    echo $id, ' ', sprintf('%.6f', $payload['at']), ' ', getmypid();
} catch (Ferrophp\JobsException $e) {
    http_response_code(500);
    echo get_class($e), ': ', $e->getMessage();
}
