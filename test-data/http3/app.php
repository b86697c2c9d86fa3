<?php
// The HTTP/3 tests' one page (server/tests/http3.rs), in both modes: classic, or as the
// worker script (frankenphp_handle_request loop when FRANKENPHP_WORKER is set).
// ?do= picks what it does:
//   server   $_SERVER's protocol facts as JSON
//   hash     sha256 and length of the request body (read as a stream)
//   big      ?mb= MiB of output in 64 KiB echoes
//   stream   a first chunk, flushed, a pause of ?ms=, then the rest
//   hints    headers_send(103) with a Link, a pause of ?ms=, then the page
//   hello    "Hello, World!"
//   sleep    a pause of ?ms=, then "slept"
function handle(): void
{
    switch ($_GET['do'] ?? 'server') {
        case 'server':
            header('Content-Type: application/json');
            echo json_encode([
                'protocol' => $_SERVER['SERVER_PROTOCOL'] ?? null,
                'https' => $_SERVER['HTTPS'] ?? null,
                'host' => $_SERVER['HTTP_HOST'] ?? null,
                'method' => $_SERVER['REQUEST_METHOD'] ?? null,
                'uri' => $_SERVER['REQUEST_URI'] ?? null,
                'port' => $_SERVER['SERVER_PORT'] ?? null,
                'worker' => function_exists('frankenphp_handle_request') && isset($GLOBALS['worker']),
                'ua' => $_SERVER['HTTP_USER_AGENT'] ?? null,
                'pid' => getmypid(),
            ]);
            break;
        case 'hash':
            header('Content-Type: application/json');
            $ctx = hash_init('sha256');
            $in = fopen('php://input', 'rb');
            $bytes = 0;
            while (!feof($in)) {
                $n = hash_update_stream($ctx, $in, 1 << 20);
                if ($n <= 0) {
                    break;
                }
                $bytes += $n;
            }
            echo json_encode(['sha256' => hash_final($ctx), 'bytes' => $bytes]);
            break;
        case 'big':
            header('Content-Type: application/octet-stream');
            $chunk = str_repeat('0123456789abcdef', 4096);
            $n = (int) ($_GET['mb'] ?? 1) * 16;
            for ($i = 0; $i < $n; $i++) {
                echo $chunk;
            }
            break;
        case 'stream':
            echo "first chunk\n";
            if (ob_get_level() > 0) {
                ob_flush();
            }
            flush();
            usleep((int) ($_GET['ms'] ?? 500) * 1000);
            echo "second chunk\n";
            break;
        case 'hints':
            header('Link: </style.css>; rel=preload; as=style');
            $sent = headers_send(103);
            header_remove('Link');
            usleep((int) ($_GET['ms'] ?? 0) * 1000);
            echo "Hello $sent";
            break;
        case 'hello':
            echo "Hello, World!";
            break;
        case 'sleep':
            usleep((int) ($_GET['ms'] ?? 100) * 1000);
            echo "slept";
            break;
        default:
            http_response_code(404);
            echo "no such action";
    }
}

if (($_SERVER['FRANKENPHP_WORKER'] ?? null) === '1') {
    $worker = true;
    while (frankenphp_handle_request('handle')) {
    }
} else {
    handle();
}
