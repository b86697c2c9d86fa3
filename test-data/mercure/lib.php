<?php
// Publishes the update the query describes with mercure_publish() and prints its id;
// shared by the classic script (publish.php) and the worker (worker.php). A failure
// prints the exception's class and message with status 500.
function mercure_test_publish(array $q): void
{
    header('Content-Type: text/plain');
    try {
        $topics = $q['topics'] ?? ($q['topic'] ?? 'default');
        echo mercure_publish(
            $topics,
            $q['data'] ?? '',
            isset($q['private']),
            $q['id'] ?? null,
            $q['type'] ?? null,
            isset($q['retry']) ? (int) $q['retry'] : null,
        );
    } catch (\Throwable $e) {
        http_response_code(500);
        echo get_class($e), ': ', $e->getMessage();
    }
}
