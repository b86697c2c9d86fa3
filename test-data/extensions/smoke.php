<?php
// Every extension of our PHP build that real apps need is loaded and does one real thing
// (server/tests/extensions.rs runs this in classic mode, worker mode and php-cli).
// Answers a JSON object: extension => "ok" or what went wrong. Tuffy.ttf is the public
// domain font from PHP's own ext/gd tests.

function smoke_checks(): array
{
    $dir = __DIR__;
    $tmp = sys_get_temp_dir();
    $check = static function (bool $cond, string $what): void {
        if (!$cond) {
            throw new RuntimeException($what);
        }
    };
    return [
        'mysqlnd' => static function () use ($check) {
            $check(str_contains(mysqli_get_client_info(), 'mysqlnd'), 'client is not mysqlnd');
        },
        'mysqli' => static function () use ($check) {
            // A real connection attempt through mysqlnd, to a socket that does not exist.
            mysqli_report(MYSQLI_REPORT_STRICT);
            try {
                new mysqli('localhost', 'u', 'p', 'd', 0, '/nonexistent/mysql.sock');
                $check(false, 'connected to nothing');
            } catch (mysqli_sql_exception $e) {
                $check($e->getCode() === 2002, 'unexpected error ' . $e->getMessage());
            }
        },
        'pdo_mysql' => static function () use ($check) {
            $check(in_array('mysql', PDO::getAvailableDrivers(), true), 'no PDO driver');
            try {
                new PDO('mysql:unix_socket=/nonexistent/mysql.sock', 'u', 'p');
                $check(false, 'connected to nothing');
            } catch (PDOException $e) {
                $check(str_contains($e->getMessage(), '2002'), $e->getMessage());
            }
        },
        'pgsql' => static function () use ($check) {
            // libpq itself answers: its error text names the socket it tried.
            $c = @pg_connect('host=/nonexistent port=5432 connect_timeout=1', PGSQL_CONNECT_FORCE_NEW);
            $check($c === false, 'connected to nothing');
            $check(str_contains(error_get_last()['message'] ?? '', '/nonexistent/.s.PGSQL.5432'),
                'no libpq error: ' . json_encode(error_get_last()));
        },
        'pdo_pgsql' => static function () use ($check) {
            $check(in_array('pgsql', PDO::getAvailableDrivers(), true), 'no PDO driver');
            try {
                new PDO('pgsql:host=/nonexistent;port=5432');
                $check(false, 'connected to nothing');
            } catch (PDOException $e) {
                $check(str_contains($e->getMessage(), '/nonexistent/.s.PGSQL.5432'), $e->getMessage());
            }
        },
        'gd' => static function () use ($check, $dir) {
            $info = gd_info();
            foreach (['FreeType Support', 'JPEG Support', 'PNG Support', 'WebP Support'] as $k) {
                $check(!empty($info[$k]), "gd without $k");
            }
            // Black FreeType text on white, through PNG and back: the text left dark pixels.
            $im = imagecreatetruecolor(240, 60);
            imagefill($im, 0, 0, imagecolorallocate($im, 255, 255, 255));
            $box = imagettftext($im, 28, 0, 8, 44, imagecolorallocate($im, 0, 0, 0),
                "$dir/Tuffy.ttf", 'ferrophp');
            $check(is_array($box) && $box[2] > 100, 'imagettftext drew nothing');
            ob_start();
            imagepng($im);
            $png = ob_get_clean();
            $check(str_starts_with($png, "\x89PNG"), 'not a PNG');
            $back = imagecreatefromstring($png);
            $check(imagesx($back) === 240 && imagesy($back) === 60, 'wrong size');
            $dark = 0;
            for ($x = 0; $x < 240; $x++) {
                for ($y = 0; $y < 60; $y++) {
                    $dark += (imagecolorat($back, $x, $y) & 0xff) < 128 ? 1 : 0;
                }
            }
            $check($dark > 200, "only $dark dark pixels");
            foreach (['imagejpeg' => "\xff\xd8", 'imagewebp' => 'RIFF'] as $fn => $magic) {
                ob_start();
                $fn($im);
                $data = ob_get_clean();
                $check(str_starts_with($data, $magic), "$fn wrote no image");
                $check(imagesx(imagecreatefromstring($data)) === 240, "$fn does not read back");
            }
        },
        'zip' => static function () use ($check, $tmp) {
            $file = tempnam($tmp, 'zip');
            $z = new ZipArchive();
            $check($z->open($file, ZipArchive::OVERWRITE) === true, 'open for writing');
            $z->addFromString('dir/hello.txt', str_repeat('zip me ', 100));
            $z->close();
            $check($z->open($file) === true, 'open for reading');
            $check($z->getFromName('dir/hello.txt') === str_repeat('zip me ', 100), 'round trip');
            $check($z->statName('dir/hello.txt')['comp_size'] < 700, 'not compressed');
            $z->close();
            unlink($file);
        },
        'sodium' => static function () use ($check) {
            $alice = sodium_crypto_box_keypair();
            $bob = sodium_crypto_box_keypair();
            $nonce = random_bytes(SODIUM_CRYPTO_BOX_NONCEBYTES);
            $sealed = sodium_crypto_box('secret', $nonce, sodium_crypto_box_keypair_from_secretkey_and_publickey(
                sodium_crypto_box_secretkey($alice), sodium_crypto_box_publickey($bob)));
            $opened = sodium_crypto_box_open($sealed, $nonce, sodium_crypto_box_keypair_from_secretkey_and_publickey(
                sodium_crypto_box_secretkey($bob), sodium_crypto_box_publickey($alice)));
            $check($opened === 'secret', 'box/open round trip');
            $check(sodium_crypto_box_open($sealed . 'x', $nonce, $bob) === false, 'forgery accepted');
        },
        'gmp' => static function () use ($check) {
            $check(gmp_strval(gmp_pow(2, 127) - 1) === '170141183460469231731687303715884105727', 'pow');
            $check(gmp_prob_prime(gmp_pow(2, 127) - 1) > 0, 'Mersenne prime not prime');
        },
        'bz2' => static function () use ($check) {
            $data = str_repeat('bzip2 ', 1000);
            $packed = bzcompress($data);
            $check(str_starts_with($packed, 'BZh') && strlen($packed) < 200, 'compress');
            $check(bzdecompress($packed) === $data, 'round trip');
        },
        'ftp' => static function () use ($check) {
            foreach (['ftp_connect', 'ftp_ssl_connect', 'ftp_login', 'ftp_put', 'ftp_nlist'] as $fn) {
                $check(function_exists($fn), "no $fn");
            }
        },
        'gettext' => static function () use ($check, $tmp) {
            $check(textdomain('ferrophp') === 'ferrophp', 'textdomain');
            $check(str_ends_with(bindtextdomain('ferrophp', $tmp), trim($tmp, '/')), 'bindtextdomain');
            // No catalogue: the message ids come back, plural chosen by n.
            $check(_('Hello') === 'Hello' && ngettext('apple', 'apples', 2) === 'apples', 'gettext');
        },
        'xsl' => static function () use ($check) {
            $xml = new DOMDocument();
            $xml->loadXML('<list><item>b</item><item>a</item></list>');
            $xsl = new DOMDocument();
            $xsl->loadXML('<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
                . '<xsl:output method="text"/><xsl:template match="/">'
                . '<xsl:for-each select="list/item"><xsl:sort select="."/><xsl:value-of select="."/>;</xsl:for-each>'
                . '</xsl:template></xsl:stylesheet>');
            $p = new XSLTProcessor();
            $p->importStylesheet($xsl);
            $check($p->transformToXml($xml) === 'a;b;', 'transform');
        },
        'soap' => static function () use ($check, $dir) {
            // A SoapClient from the local WSDL talks to a SoapServer in this process: the
            // request and the response are real SOAP envelopes both ways.
            $client = new class ("$dir/service.wsdl", ['cache_wsdl' => WSDL_CACHE_NONE]) extends SoapClient {
                public string $lastEnvelope = '';
                public function __doRequest($request, $location, $action, $version, $oneWay = false): ?string
                {
                    $this->lastEnvelope = $request;
                    $server = new SoapServer(__DIR__ . '/service.wsdl', ['cache_wsdl' => WSDL_CACHE_NONE]);
                    $server->setObject(new class () {
                        public function add(int $a, int $b): int
                        {
                            return $a + $b;
                        }
                    });
                    ob_start();
                    $server->handle($request);
                    return ob_get_clean();
                }
            };
            $check(in_array('int add(int $a, int $b)', $client->__getFunctions(), true),
                'functions: ' . json_encode($client->__getFunctions()));
            $check($client->add(40, 2) === 42, 'add');
            $check(str_contains($client->lastEnvelope, 'urn:ferrophp-calc'), 'envelope');
        },
        'shmop' => static function () use ($check) {
            $key = random_int(0x10000, 0x7fffffff);
            $shm = shmop_open($key, 'n', 0600, 64);
            $check($shm !== false, 'create');
            shmop_write($shm, 'shared bytes', 0);
            $check(shmop_read(shmop_open($key, 'a', 0, 0), 0, 12) === 'shared bytes', 'read back');
            shmop_delete($shm);
        },
        'sysvsem' => static function () use ($check) {
            $sem = sem_get(random_int(0x10000, 0x7fffffff), 1, 0600, true);
            $check(sem_acquire($sem) && sem_release($sem), 'acquire/release');
            $check(sem_acquire($sem, true) && sem_release($sem), 'non-blocking acquire');
            sem_remove($sem);
        },
        'sysvshm' => static function () use ($check) {
            $shm = shm_attach(random_int(0x10000, 0x7fffffff), 4096, 0600);
            shm_put_var($shm, 1, ['nested' => [1, 2.5, 'three']]);
            $check(shm_get_var($shm, 1) === ['nested' => [1, 2.5, 'three']], 'round trip');
            shm_remove($shm);
        },
        'sysvmsg' => static function () use ($check) {
            $q = msg_get_queue(random_int(0x10000, 0x7fffffff), 0600);
            $check(msg_send($q, 7, ['hello' => 'queue']), 'send');
            $check(msg_receive($q, 7, $type, 1024, $msg, true, MSG_IPC_NOWAIT) && $msg === ['hello' => 'queue'], 'receive');
            msg_remove_queue($q);
        },
        'readline' => static function () use ($check) {
            // Built with libedit, for php-cli's interactive use.
            $check(function_exists('readline') && function_exists('readline_add_history'), 'functions');
        },
    ];
}

function smoke_run(): array
{
    $results = [];
    foreach (smoke_checks() as $ext => $fn) {
        if (!extension_loaded($ext)) {
            $results[$ext] = 'not loaded';
            continue;
        }
        try {
            $fn();
            $results[$ext] = 'ok';
        } catch (Throwable $e) {
            $results[$ext] = get_class($e) . ': ' . $e->getMessage();
        }
    }
    return $results;
}

if (function_exists('ferrophp_handle_request') && !empty($_SERVER['FRANKENPHP_WORKER'])) {
    // Worker mode: the same checks on every request of one long-lived script.
    while (ferrophp_handle_request(static function (): void {
        header('Content-Type: application/json');
        echo json_encode(smoke_run());
    })) {
    }
} else {
    if (PHP_SAPI !== 'cli') {
        header('Content-Type: application/json');
    }
    echo json_encode(smoke_run()), "\n";
}
