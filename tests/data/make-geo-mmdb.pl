#!/usr/bin/perl
# make-geo-mmdb.pl - writes a tiny GeoIP2-Country-shaped MaxMind database for
# the unit tests (tests/unit/test_geo.c), using Debian's
# libmaxmind-db-writer-perl. Only documentation and private ranges hold data,
# so nothing here says anything about real addresses; that is why reserved
# networks are kept. IPv4 lives in the IPv6 tree at ::/96 and is aliased from
# ::ffff:0:0/96, as in MaxMind's own databases.
#
#   perl tests/data/make-geo-mmdb.pl OUT.mmdb
use strict;
use warnings;

use MaxMind::DB::Writer::Tree;

@ARGV == 1 or die "usage: $0 OUT.mmdb\n";
my $out = $ARGV[0];

# network → ISO 3166-1 alpha-2, English name
my @rows = (
    [ '203.0.113.0/24',  'DE', 'Germany' ],
    [ '198.51.100.0/24', 'JP', 'Japan' ],
    [ '192.0.2.0/24',    'US', 'United States' ],
    [ '127.0.0.0/8',     'NL', 'Netherlands' ],
    [ '2001:db8:1::/48', 'FR', 'France' ],
);

my %types = (
    country  => 'map',
    iso_code => 'utf8_string',
    names    => 'map',
    en       => 'utf8_string',
);

my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version               => 6,
    record_size              => 24,
    database_type            => 'GeoIP2-Country',
    languages                => ['en'],
    description              => { en => 'shortd unit test countries' },
    alias_ipv6_to_ipv4       => 1,
    remove_reserved_networks => 0,
    map_key_type_callback    => sub { $types{ $_[0] } },
);

for my $r (@rows) {
    my ( $net, $cc, $name ) = @$r;
    $tree->insert_network( $net,
        { country => { iso_code => $cc, names => { en => $name } } } );
}

open my $fh, '>:raw', $out or die "cannot open '$out': $!\n";
$tree->write_tree($fh);
close $fh or die "cannot write '$out': $!\n";
