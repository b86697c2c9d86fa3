<?php
// FrankenPHP's worker API from a worker script: ?do=info|hints|send|stream|finish.
$bootWorker = $_SERVER['FRANKENPHP_WORKER'] ?? null;
$bootId = bin2hex(random_bytes(4));
$handler = static function () use ($bootWorker, $bootId): void {
    switch ($_GET['do'] ?? 'info') {
        case 'info':
            header('X-Custom: one');
            header('X-Multi: a');
            header('X-Multi: b', false);
            echo json_encode([
                'boot' => $bootId,
                'boot_worker' => $bootWorker,
                'worker' => $_SERVER['FRANKENPHP_WORKER'] ?? null,
                'request_headers' => frankenphp_request_headers(),
                'getallheaders' => getallheaders(),
                'response_headers' => frankenphp_response_headers(),
            ]);
            break;
        case 'hints':
            // 103 Early Hints with the Link header, then a normal final response.
            header('Link: </style.css>; rel=preload; as=style');
            $hint = headers_send(103);
            header_remove('Link');
            header('X-Final: yes');
            echo "hint:$hint sent:" . (headers_sent() ? 'yes' : 'no');
            break;
        case 'send':
            header('X-Early: yes');
            $sent = headers_send(202);
            $after = headers_sent() ? 'yes' : 'no';
            @header('X-Too-Late: yes');
            echo "send:$sent after:$after";
            break;
        case 'stream':
            // Streams until the client is gone, then records what the handler saw.
            $chunks = 0;
            for ($i = 0; $i < 200 && !connection_aborted(); $i++) {
                echo str_repeat('s', 65536);
                flush();
                $chunks++;
                usleep(20000);
            }
            file_put_contents($_GET['marker'], "chunks=$chunks status=" . connection_status());
            break;
        case 'finish':
            header('X-Finish: yes');
            echo 'before finish';
            $finished = frankenphp_finish_request();
            echo 'never sent';
            usleep(1000 * (int) ($_GET['ms'] ?? 0));
            file_put_contents($_GET['marker'], 'after finish ok=' . var_export($finished, true));
            break;
    }
};
while (frankenphp_handle_request($handler)) {
}
