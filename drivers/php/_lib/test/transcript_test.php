<?php
// The golden transcript (drivers/contract/transcript.json) through the helper's message loop: each
// case's lines to contract-driver.php (the transcript's contract client on labdriver.php), its
// answers compared with the case's. Run: php drivers/php/_lib/test/transcript_test.php (exit
// status 0 when every case passed).

declare(strict_types=1);

/** the transcript's comparison: equal JSON, where a <...> string in $want is a pattern */
function matches(mixed $want, mixed $got): bool
{
    if (is_string($want) && str_starts_with($want, '<') && str_ends_with($want, '>')) {
        if ($want === '<any string>') return is_string($got);
        if ($want === '<any number>') return (is_int($got) || is_float($got)) && $got >= 0;
        if (str_starts_with($want, '<text with: ')) return is_string($got) && str_contains($got, substr($want, 12, -1));
    }
    if ($want instanceof stdClass) {
        if (!$got instanceof stdClass) return false;
        $w = get_object_vars($want);
        $g = get_object_vars($got);
        foreach ($w as $k => $v) {
            if ($k !== '<more>' && (!array_key_exists($k, $g) || !matches($v, $g[$k]))) return false;
        }
        foreach ($g as $k => $v) {
            if (!array_key_exists($k, $w) && !(array_key_exists('<more>', $w) && matches($w['<more>'], $v))) return false;
        }
        return true;
    }
    if (is_array($want)) {
        if (!is_array($got) || count($got) !== count($want)) return false;
        foreach ($want as $i => $v) {
            if (!matches($v, $got[$i])) return false;
        }
        return true;
    }
    return $want === $got;
}

/** the lab lines through contract-driver.php; [its answers, its exit status] */
function talk(array $lab): array
{
    $in = tempnam(sys_get_temp_dir(), 'transcript-in');
    $out = tempnam(sys_get_temp_dir(), 'transcript-out');
    file_put_contents($in, implode('', array_map(
        fn ($m) => (is_string($m) ? $m : json_encode($m, JSON_UNESCAPED_SLASHES)) . "\n", $lab)));
    $proc = proc_open([PHP_BINARY, __DIR__ . '/contract-driver.php'],
        [0 => ['file', $in, 'r'], 1 => ['file', $out, 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
    $code = proc_close($proc);
    $got = [];
    foreach (file($out, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
        $got[] = json_decode($line) ?? $line;
    }
    unlink($in);
    unlink($out);
    return [$got, $code];
}

$transcript = json_decode(file_get_contents(__DIR__ . '/../../../contract/transcript.json'));
$failed = 0;
foreach ($transcript->cases as $case) {
    [$got, $code] = talk($case->lab);
    $ok = $code === 0 && matches($case->driver, $got);
    if (!$ok) {
        echo "FAIL $case->name: $case->about\n     want " . json_encode($case->driver, JSON_UNESCAPED_SLASHES)
            . "\n     got  " . json_encode($got, JSON_UNESCAPED_SLASHES) . " (exit $code)\n";
        $failed++;
    }
}
$patterns = matches(json_decode('{"a":"<text with: bad>","<more>":"<any string>"}'), json_decode('{"a":"a bad job","b":"x"}'))
    && !matches(json_decode('{"a":1}'), json_decode('{"a":1,"b":"x"}')) && !matches([1, 2], [2, 1])
    && !matches('<any number>', true) && !matches(1, 1.0);
if (!$patterns) {
    echo "FAIL the comparison takes patterns and nothing else\n";
    $failed++;
}
echo 'transcript: ' . count($transcript->cases) . " case(s), $failed failed\n";
exit($failed ? 1 : 0);
