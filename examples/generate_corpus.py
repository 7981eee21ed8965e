#!/usr/bin/env python3
"""Generate a synthetic English-like corpus with planted near-duplicates.

The corpus imitates a small web crawl: news articles, product pages and forum
threads. Sentences come from a hand-written grammar (templates with typed slots)
over a hand-written vocabulary of a few thousand word forms. Words inside each
slot class are drawn from a Zipf-like distribution, and real English function
words (the, of, to, was, has, that, ...) sit where English puts them, because
stopword-based methods such as SpotSigs depend on them.

Planted structure (see ``--dup-fraction``):

* clusters made of one ``original`` and 1-5 variants of it, each variant made
  with one edit strength: ``exact`` (same title and text, another URL),
  ``light`` (a few word edits, whitespace/case/punctuation noise, maybe a new
  title), ``medium`` (more word edits, a dropped sentence, a boilerplate header,
  footer or "Related articles" block), ``heavy`` (reordered paragraphs, several
  dropped sentences, a new paragraph, many word edits, boilerplate);
* a majority of ``unique`` documents, unrelated to each other.

Documents are generated in blocks of 10,000; each block is shuffled, so
variants sit near (but rarely next to) their original. Memory stays flat, which
keeps a million-document run cheap, and blocks can be made by several processes
(``--jobs``) without changing the output.

Everything random comes from ``random.Random`` instances seeded from ``--seed``
(and the block number); no hash(), no set iteration, no clock. The same
arguments give byte-identical files on every platform and Python version
(3.10+), whatever ``--jobs`` is.

Ground truth is written to a separate file (``--truth``), one JSON object per
corpus row, in corpus order::

    {"id": "doc-000123", "group": "g-000045", "edit": "light"}

Documents of one group are copies of one original; a unique document is
alone in its group.

Usage::

    python examples/generate_corpus.py --docs 100000 --seed 1 -o corpus.jsonl \
        --truth truth.jsonl [--dup-fraction 0.2]
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
from datetime import date, timedelta
from itertools import cycle, repeat
from random import Random

try:  # orjson is faster; json with these settings writes the same bytes
    import orjson

    def _dumps(obj) -> bytes:
        return orjson.dumps(obj)

except ImportError:  # pragma: no cover - exercised only without orjson
    import json

    def _dumps(obj) -> bytes:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


#: Bump when the output for a given (docs, seed, dup_fraction) changes.
GENERATOR_VERSION = 1

BLOCK = 10_000
EDIT_KINDS = ("exact", "light", "medium", "heavy")
EDIT_WEIGHTS = (0.15, 0.40, 0.30, 0.15)
CLUSTER_SIZES = (1, 2, 3, 4, 5)  # number of variants next to the original
CLUSTER_WEIGHTS = (0.36, 0.26, 0.18, 0.11, 0.09)
GENRES = ("news", "product", "forum")
GENRE_WEIGHTS = (0.6, 0.2, 0.2)

# --------------------------------------------------------------------------
# Vocabulary. Each list is written roughly from common to rare; the rank in the
# list sets the Zipf weight. "a/b" gives an irregular plural, "a/b/c" the past
# tense and participle of an irregular verb ("a/b/c/d": also the -ing form).
# --------------------------------------------------------------------------

ROLES = """
official resident spokesperson/spokespeople worker student teacher manager
director researcher analyst parent officer executive mayor engineer lawmaker
nurse doctor driver owner customer member volunteer expert economist scientist
lawyer judge farmer coach player founder investor critic voter tenant landlord
developer designer architect historian professor surgeon pilot captain
commissioner inspector auditor contractor consultant prosecutor attorney
witness shopper commuter fisherman/fishermen miner electrician plumber mechanic
chef baker librarian curator neighbor spokeswoman/spokeswomen
chairman/chairmen chairwoman/chairwomen candidate diplomat ambassador
negotiator organizer activist protester athlete runner referee fan trader
banker broker accountant entrepreneur retiree veteran patient caregiver
pharmacist dentist therapist programmer technician supervisor clerk cashier
courier guard ranger biologist chemist physicist geologist governor senator
regulator editor reporter photographer musician artist writer poet coordinator
administrator trustee treasurer secretary deputy sheriff paramedic firefighter
""".split()

ORG_NOUNS = """
council company agency committee board ministry department union university
hospital court team club firm bank startup charity foundation parliament
airline retailer publisher studio laboratory museum library utility railway
cooperative government administration authority commission network institute
federation league orchestra newspaper broadcaster school clinic manufacturer
supplier distributor insurer lender association alliance coalition party
trust fund authority council
""".split()

THINGS = """
plan budget proposal report policy project contract deal law bill rule program
study survey investigation strategy decision agreement schedule design system
service platform price fee tax loan grant market supply shortage delay change
reform review audit inquiry complaint lawsuit settlement ruling appeal request
permit license application measure amendment ordinance regulation guideline
standard target goal forecast estimate figure rate cost expense revenue profit
loss debt deficit surplus salary wage pension benefit subsidy investment stake
share stock bond currency recession recovery shipment export import tariff sanction treaty ceiling limit ban
restriction requirement exemption discount offer bid merger acquisition
partnership venture expansion closure layoff dispute conflict crisis/crises outage
failure breach leak threat risk warning alert notice update upgrade release
version feature tool app website database device sensor chip engine
vehicle truck bus train ship aircraft/aircraft drone satellite road tunnel pipeline route
line track lane grid reactor turbine panel well crop harvest forest garden
vaccine drug treatment therapy test result finding record
document file letter memo email message statement speech interview announcement
slogan brand logo label package order delivery store shop restaurant
menu recipe ticket seat title trophy medal prize award contest collection
painting sculpture book novel album song film series/series episode show tour
scholarship exam course degree lesson classroom uniform lunch
playground ambulance shelter clinic vote ballot poll campaign seat district
boundary zone map census petition lease mortgage rent deposit claim
fine penalty refund voucher coupon subscription membership account password
backup server cable antenna tower signal frequency license quota allowance
""".split()

PLACE_NOUNS = """
bridge station harbor park market school factory warehouse stadium airport
neighborhood district village highway river coast valley campus square
plaza avenue street border port terminal pier mall arena theater hall courthouse
prison farm plant mill depot garage hotel apartment building tower estate suburb
town county province island peninsula lake desert canyon beach ridge marina
library hospital cemetery monastery castle lighthouse dam reservoir quarry
""".split()

EVENTS = """
meeting hearing election festival conference storm flood wildfire strike protest
match tournament trial launch ceremony summit rally parade concert auction
debate referendum outbreak heatwave drought earthquake landslide blackout crash
collision rescue celebration anniversary premiere exhibition fair marathon race
final workshop seminar briefing fundraiser vigil recount inspection evacuation
""".split()

ADJECTIVES = """
new major local small large recent early key public private national regional
former senior annual federal municipal rural urban coastal northern southern
eastern western central international foreign domestic economic political
financial legal medical technical digital environmental social cultural historic
modern traditional popular controversial significant serious minor sharp steady
slow rapid sudden unexpected official independent critical strong weak high low
full partial final initial temporary permanent additional separate joint similar
different common rare unusual familiar simple complex difficult clear uncertain
likely possible necessary available limited affordable expensive cheap costly
free busy quiet crowded empty dry cold warm heavy bright dark green young old
ancient fresh long short wide narrow deep tall massive tiny huge modest generous
strict tough fair safe dangerous risky stable fragile healthy active ready
willing eager anxious worried confident hopeful proud angry frustrated pleased
surprised grateful careful detailed broad fierce bitter friendly hostile open
direct formal informal main primary basic advanced standard special general
specific typical average overall total real actual virtual mobile electric solar
nuclear industrial agricultural commercial residential academic scientific
military civil criminal judicial royal religious musical artistic athletic
remote nearby distant global emerging established leading growing rising
struggling successful effective efficient reliable innovative creative practical
useful helpful harmful crucial essential vital urgent immediate ongoing upcoming
previous latest ambitious cautious vague bold costly outdated crowded hidden
unpopular sweeping lengthy brief narrow tight loose steep gradual
""".split()

ADVERBS = """
also now still already recently again finally nearly largely quickly slowly
sharply steadily widely openly publicly privately briefly formally officially
quietly strongly heavily mostly partly fully clearly simply directly closely
rarely often usually typically currently previously initially eventually
immediately temporarily roughly reportedly apparently certainly possibly
probably surprisingly unexpectedly repeatedly carefully firmly gradually
""".split()

# transitive verbs: an actor does something to a thing
VERBS_T = """
approve announce review support propose launch reject delay expand complete
release publish sign adopt unveil defend criticize examine consider discuss
accept challenge question block introduce revise extend reduce raise lower
cut/cut/cut increase boost limit restrict replace remove restore repair
rebuild/rebuilt/rebuilt build/built/built open close finish
begin/began/begun/beginning plan/planned/planned/planning manage lead/led/led
win/won/won/winning lose/lost/lost sell/sold/sold buy/bought/bought acquire
hire test measure track monitor receive deliver produce develop design create
host organize attend visit inspect audit settle resolve address tackle handle
ignore welcome praise blame confirm deny reveal disclose present
submit/submitted/submitted/submitting draft pursue seek/sought/sought secure
protect preserve spend/spent/spent invest borrow lend/lent/lent pay/paid/paid
collect earn order request require allow prevent postpone suspend halt resume
renew reopen upgrade update improve simplify finance oversee/oversaw/overseen
scrap/scrapped/scrapped/scrapping approve endorse veto/vetoed/vetoed
""".split()

# intransitive trend verbs: a figure or a thing moves
VERBS_I = """
rise/rose/risen fall/fell/fallen grow/grew/grown decline increase
drop/dropped/dropped/dropping improve slow stall recover surge climb jump
slip/slipped/slipped/slipping shrink/shrank/shrunk stabilize weaken strengthen
collapse rebound level/leveled/leveled
""".split()

SAY = """
said said said said said added noted explained argued warned stressed admitted
claimed confirmed insisted wrote acknowledged suggested predicted cautioned
""".split()

# verbs for forum posts about gadgets
VERBS_F = """
update restart reset install replace check clean change disable enable
remove reinstall configure test charge open tighten swap/swapped/swapped/swapping
download calibrate adjust flash/flashed/flashed
""".split()

FIRST_NAMES = """
Maria James Anna David Sarah Michael Laura Daniel Emma Thomas Olivia Robert
Sofia John Elena Carlos Grace Peter Hannah Ahmed Chen Priya Lucas Fatima Noah
Leila Samuel Ingrid Mateo Yuki Omar Claire Victor Amara Felix Nadia Hugo Rosa
Kwame Julia Ivan Mei Diego Alice Tomas Aisha Marco Lena Raj Beatriz Kenji
Sophie Andre Zainab Patrick Elif Gabriel Nora Luis Hana Oscar Chloe Dmitri
Isabel Tariq Emily Stefan Camila Arjun Helen Pedro Ines Jonas Ruth Malik
Vera Simon Lucia Hiro Amelia Bruno Sara Kofi Mira Paul Irene Rafael Zoe Sean
Alma Viktor Dara Joel Esther Mohammed Greta Luca Naomi Arturo Freya Wei
Carmen Adam Lina Nikolai Abigail Idris Marta Henry Yasmin Pablo Ada Jorge
Linnea Ravi Mariam George Tanvi Emil Rebecca Cyrus Ivy Kemal Alba Declan
Selma Theo Ayesha Xavier Margot Ezra Keiko Miguel Frida Ali Bianca Otto
José Zoë Renée Björn Chloé Ananya Santiago Harriet Eamon Sunita Leon Juno
""".split()

SURNAMES = """
Garcia Smith Chen Müller Rossi Kim Patel Johnson Novak Silva Okafor Tanaka
Nguyen Brown Hansen Kowalski Martin Lopez Ivanova Haddad Dubois Andersen
Fischer Moreno Nakamura Singh Walker Costa Larsen Osei Jensen Romero Wilson
Schmidt Alvarez Petrov Mensah Ortiz Bauer Clarke Herrera Yilmaz Sato Murphy
Kaur Reyes Berg Nowak Hughes Castro Weber Lindqvist Adeyemi Moretti Kelly
Suzuki Diaz Wagner Ahmed Evans Santos Fernandes Hoffmann Lee Ward Medina
Becker Olsen Mwangi Ramos Turner Russo Jimenez Dimitrov Rahman Price Vega
Keller Kang Foster Navarro Hall Ibrahim Quinn Vargas Lang Sokolov Byrne
Horvath Baker Mendes Frank Ali Gray Torres Nielsen Iyer Fox Cruz Meyer Park
Bell Rojas Koch Sharma Hayes Aguilar Brandt Owusu Price Molina Stone
Ferreira Wood Lim Kruger Marsh Delgado Vogel Banerjee Reid Castillo Arnold
Campbell Serrano Wolf Yamamoto Perry Salazar Horn Bose Fleming Rivas Krause
Obi Grant Pereira Hahn Holmes Soto Winter Rao Burke Acosta Roth Doyle Pham
""".split()

CITIES = """
Springfield Riverton Lakeside Oakdale Fairview Milton Ashford Greenville
Bristol Portland Denver Austin Seattle Boston Chicago Toronto Vancouver Dublin
Lisbon Porto Madrid Valencia Lyon Marseille Hamburg Munich Leipzig Vienna Graz
Zurich Geneva Milan Turin Naples Athens Krakow Prague Brno Budapest Oslo Bergen
Stockholm Malmo Helsinki Tallinn Riga Copenhagen Aarhus Rotterdam Utrecht
Antwerp Ghent Leeds Glasgow Cardiff Belfast Halifax Calgary Adelaide Perth
Auckland Wellington Nairobi Accra Lagos Cairo Casablanca Durban Mumbai Pune
Chennai Dhaka Jakarta Manila Osaka Busan Taipei Hanoi Santiago Lima Quito
Bogota Medellin Monterrey Recife Cordoba Montevideo Tucson Omaha Boise Raleigh
Savannah Richmond Madison Spokane Fresno Tacoma Eugene Duluth Kingston
Westbrook Northfield Brookhaven Pinecrest Elmwood Cedarville Harborview
Millbrook Stonebridge Clearwater Redfield Maplewood Ironton Silverton
""".split()

REGIONS = """
the north, the south, the region, the state, the province, the valley, the county,
Europe, Asia, Africa, Latin America, North America, the Pacific, the Midwest,
Scandinavia, the Balkans, the Alps, the coast, the capital region, the border area,
the delta, the highlands, the islands, the metro area, the northeast, the southwest
""".replace("\n", " ").split(",")

PRODUCTS = (
    """
laptop headset kettle backpack blender monitor jacket tent bicycle
camera lamp chair desk mattress speaker charger keyboard mouse/mice router drill
vacuum toaster grill fan heater humidifier purifier bottle mug pan skillet
knife/knives scale watch phone tablet printer projector microphone webcam
stroller sofa rug pillow blanket towel boot sneaker coat sweater umbrella
suitcase wallet belt glove helmet kayak ladder wrench hammer screwdriver mower
trimmer hose cooler lantern thermostat doorbell smartwatch
""".split()
    + ["pair of earbuds/pairs of earbuds", "coffee maker", "air fryer"]
)

# devices that people ask about on forums
FORUM_PRODUCTS = (
    """
router laptop phone printer tablet monitor smartwatch thermostat doorbell camera
speaker headset keyboard mouse/mice projector webcam drone dashcam console
""".split()
    + ["robot vacuum", "smart plug", "e-reader", "bike computer", "mesh system"]
)

FEATURES = """
battery screen handle strap lid fabric motor blade cable zipper sole frame lens
button switch cord plug filter pocket seam wheel hinge base cover case display
sensor port finish coating grip cushion padding collar hood lining buckle clasp
nozzle dial remote stand bracket mount light timer indicator
""".split()

PRODUCT_ADJ = """
lightweight durable compact portable wireless waterproof rechargeable adjustable
foldable ergonomic stainless breathable soft sturdy sleek quiet powerful
versatile premium slim padded insulated reusable washable cordless ceramic
wooden leather cotton aluminum matte glossy classic minimalist heavy-duty
""".split()

FORUM_THINGS = """
update firmware setting driver battery app cable router screen account password
network connection menu option profile backup log setup mode charger adapter
port fan filter sensor fuse
""".split()

# fixed phrases: plain strings, no slots inside
PRODUCT_PREDICATES = [
    "stays cool under load",
    "folds flat for storage",
    "charges in under two hours",
    "fits in most carry-on bags",
    "cleans up in seconds",
    "holds its shape after washing",
    "runs quietly at night",
    "locks firmly into place",
    "resists scratches and stains",
    "keeps drinks hot for hours",
    "works with most phones",
    "survives the occasional drop",
    "lasts a full day on one charge",
    "adjusts with one hand",
    "feels solid in the hand",
    "sits flat on any surface",
    "pairs in a few seconds",
    "handles daily use with ease",
    "keeps out rain and dust",
    "heats up in about a minute",
    "stays comfortable all day",
    "does not wobble or slide",
    "needs no tools to assemble",
    "looks good in any room",
    "is easy to replace",
    "is safe for the dishwasher",
    "is covered by the warranty",
    "is made from recycled materials",
    "is quieter than the old model",
    "is sold separately in some regions",
]

FORUM_PROBLEMS = [
    "keeps restarting",
    "will not turn on",
    "disconnects every few minutes",
    "shows an error on startup",
    "drains the battery overnight",
    "makes a clicking noise",
    "runs very hot",
    "freezes when I open the menu",
    "stopped charging",
    "is stuck on the logo screen",
    "loses its settings after a reboot",
    "beeps three times and shuts down",
    "only works when plugged in",
    "is much slower than before",
    "flickers at low brightness",
    "will not pair anymore",
    "connects but has no internet",
    "reports the wrong temperature",
    "turns off at around twenty percent",
    "ignores the schedule I set",
]

FORUM_OPENERS = [
    "Hi all,",
    "Hello everyone,",
    "Quick question:",
    "Long time reader, first post.",
    "Hey folks,",
    "Not sure if this is the right board, but",
    "Hoping someone can help.",
]

USERS_FOR = [
    "everyday use",
    "small kitchens",
    "frequent travelers",
    "home offices",
    "beginners",
    "professionals",
    "weekend trips",
    "students",
    "long commutes",
    "busy families",
    "small apartments",
    "outdoor work",
]

COLORS = """
black white gray silver navy blue red green olive sand beige charcoal teal
burgundy cream graphite
""".split()

MATERIALS = [
    "aluminum",
    "stainless steel",
    "recycled plastic",
    "cotton",
    "leather",
    "oak",
    "bamboo",
    "ceramic",
    "nylon",
    "polyester",
    "tempered glass",
    "carbon fiber",
]

OUTLET_WORDS = """
Herald Tribune Post Gazette Ledger Courier Journal Times Chronicle Observer
Record Dispatch Sentinel Standard Review Bulletin Examiner Register Monitor
Beacon Express Independent
""".split()

SITE_WORDS = """
daily metro city valley coast north south press report wire local today
""".split()

STORE_WORDS = """
shop store market outlet depot supply direct gear home goods
""".split()

FORUM_SITE_WORDS = """
techtalk fixit gadgethelp homegear makers tinker diyhub repairs geekden
""".split()

BRAND_HEADS = "Nor Al Ver Tal Kor Lum Bri Zen Ost Mar Cal Vel Dra Fen Sol Tri Ax Quin Ro Ely".split()
BRAND_TAILS = "vik tara dex ora ium sen wick ly tro lux ent ano ix oni ar ova".split()
COMPANY_SUFFIXES = "Systems Foods Energy Logistics Health Labs Group Motors Media Holdings Partners Robotics".split()
ORG_QUALIFIERS = ["City", "Regional", "Public", "County", "State", "Metropolitan", "Community", "National"]
SERIES = "Air Pro Max Lite One Go Flex Edge Core Neo Plus Mini".split()

DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = """January February March April May June July August September October
November December""".split()
UNITS = "week month year day quarter season".split()
UNITS_PL = "weeks months years days quarters seasons".split()
PERIODS = "year month summer week quarter season decade".split()
HOURS = ["noon", "midnight", "6 p.m.", "8 a.m.", "the afternoon", "the evening", "10 a.m."]
ORDINALS = "second third fourth fifth sixth".split()
SMALL_NUMBERS = (
    "two three four five six seven eight nine ten".split()
    + [str(i) for i in range(11, 100)]
    + "120 150 200 250 300 400 500 800 1,000 1,200 1,500 2,000 3,500 5,000 10,000 40,000".split()
)

SYNONYMS = {
    "said": "stated",
    "big": "large",
    "large": "big",
    "buy": "purchase",
    "about": "around",
    "new": "fresh",
    "start": "begin",
    "help": "assist",
    "show": "indicate",
    "also": "as well",
    "but": "however",
    "many": "numerous",
    "need": "require",
    "use": "utilize",
    "quickly": "rapidly",
    "recent": "latest",
    "major": "big",
    "small": "minor",
    "officials": "authorities",
    "residents": "locals",
    "percent": "per cent",
    "company": "firm",
    "announced": "unveiled",
    "plan": "proposal",
    "since": "after",
    "because": "as",
    "nearly": "almost",
    "very": "really",
}
FILLERS = """
also now still very really just even already reportedly again currently
""".split()

# --------------------------------------------------------------------------
# Sentence grammar. {slot} is filled from the urn of that name; upper-case
# slots come from the document's own cast (its people, organization, topic),
# which keeps a document about one thing.
# --------------------------------------------------------------------------

NEWS_LEADS = [
    "{O} {vt_ed} a {adj} {T} on {day}, a move that {roles} {say} could affect {num} {Ts} across {C}.",
    "{O} has {vt_en} its {adj} {T}, ending months of {E2s} over how the money should be spent.",
    "Officials in {C} {vt_ed} a {adj} {T} on {day} after a {adj} {event} at the {pnoun}.",
    "{P1}, the {lead_role} of {O}, {say} on {day} that the {T} would be {vt_en} by the end of the {period}.",
    "A {adj} {T} backed by {O} is set to {vt} the way {roles} in {C} pay for {things}.",
    "The {T} that {O} {vt_ed} last {unit} is already running {pct} over budget, according to {adj} figures.",
    "After a {adj} {event} on {day}, the {Oc} {vt_ed} the {T} by a vote of {vote}.",
    "{Ts} in {C} have {vi_en} by {pct} since {month}, and {roles} say the {T} is to blame.",
]

NEWS_BODY = [
    "The {T} is expected to cost about {money}, {pct} more than {adj} estimates.",
    "Officials in {C} {say} the {thing} had been {vt_en} twice since {year}.",
    "At least {num} {roles} attended the {event} at the {pnoun} on {day} evening.",
    "Critics have {adv} {vneg_en} the {T}, arguing that it does little for {roles} in {region}.",
    "According to a {adj} {doc_thing} by {O}, {pct} of {roles} in {C} now rely on {things} at least once a {unit}.",
    "{P2}, a {role} who has lived in {C} for {num} years, {say} the {Ts} had {adv} changed the {pnoun}.",
    "The {Oc} will hold a {adj} {event} on the {T} next {day}.",
    "It was not immediately clear whether the {T} would be {vt_en} before the {event}.",
    "Prices for {things} have {vi_en} by {pct} since {month}, the {adj} figures show.",
    "In a statement, {O} {say} it was {adv} {vt_ing} the {T} and would share more details in the coming {units}.",
    "The {T} has been a source of tension between the {Oc} and {roles} in {C} for years.",
    "{P1l} did not respond to a request for comment on {day}.",
    "The {adj} {pnoun} in {C} has been closed since {month} because of the {E}.",
    "Last year, the {Oc} {vt_ed} {num} {things} and {vt_ed} another {num} {things}.",
    "Supporters say the {T} will {vt} {adj} {things} and {vt} the {pnoun} for years to come.",
    "The {role} {say} the {Oc} was working with {cname} to {vt} the {T} as soon as possible.",
    "Residents of {C} will be able to comment on the {T} until {month} {dnum}.",
    "Shares of {cname} {vi_ed} {pct} in {adj} trading after the company {vt_ed} its {adj} {thing}.",
    "The {T} is part of a {adj} effort to {vt} {things} in {region} by {year}.",
    "{P2l}, who {vt_ed} a similar {thing} in {year}, {say} the {Ts} were {adv} {adj}.",
    "Some {roles} {say} they had not been told about the {T} until {day}.",
    "The {E} drew {num} {roles} and {num} {roles}, organizers {say}.",
    "Questions remain about who will pay for the {T} and how long the work will take.",
    "For now, the {Oc} {say} the {thing} would remain in place.",
    "The {T} will be discussed again at the next {event} of the {Oc}, scheduled for {month} {dnum}.",
    "Data from the {org} show that {things} in {C} have {vi_en} for {num} straight {units}.",
    '"There is still a lot of work to do," {P2l} {say}, adding that the {Oc} had {adv} {vt_en} its {thing}.',
    '"We knew this day would come," said {P2}, a {role} in {C}.',
    '"We have {adv} {vt_en} every part of this {T}," {P1l} {say}.',
    '"This is not about {things}. It is about the {roles} who depend on them," {P1l} {say}.',
    '"Nobody wants to see the {pnoun} closed for another {unit}," {P2l} {say}.',
    "Asked whether the {T} would be {vt_en}, {P1l} {say} that no decision had been made.",
    "The {Oc} has {vt_en} similar {things} in {city} and {city} in recent years.",
    "Under the {adj} {T}, {roles} would be required to {vt} their {things} every {unit}.",
    "A spokesperson for {O} declined to comment on the {adj} {thing}.",
    "The {T} was first {vt_en} in {year}, when {P1} was still a {role} at {cname}.",
    "By {hour}, more than {num} {roles} had gathered outside the {pnoun}.",
    "Neither the {Oc} nor {cname} has said when the {T} will be finished.",
    "It is the {ordinal} time this year that the {Oc} has {vt_en} a {T} of this kind.",
    "The {adj} {E} forced {num} {roles} to leave their homes near the {pnoun}.",
    "{P1l} {say} the {Oc} would {vt} the {T} only if {roles} were given a say in it.",
    "Several {roles} who spoke to the {outlet} asked not to be named.",
    "The {T} comes as {C} faces a {adj} {thing} and rising {things}.",
    "Analysts at {cname} expect {things} to {vi} further in the second half of the year.",
    "There are about {num} {pnouns} in {C}, and most of them were built before {year}.",
    "If the {T} is {vt_en}, work could begin as early as {month}.",
    "That figure is {adv} lower than the {pct} the {Oc} had {vt_en} in {year}.",
    "The {thing} was {adv} {vt_en} after {roles} {vt_ed} it at a {event} in {month}.",
    "The {Oc} first raised concerns about the {T} in {year}, but the issue stalled until this {period}.",
    "{P1l} has {adv} defended the {T} in public, most recently at a {event} in {city}.",
    "Local businesses near the {pnoun} say the {E} has cost them {money} so far.",
    "The {T} would affect roughly {num} {pnouns} and more than {num} {roles}, according to {adj} estimates.",
    "A {adj} version of the {T} was {vneg_en} by {roles} in {year}.",
    "The {org} is expected to publish its own {doc_thing} on the {T} later this {period}.",
    "Work on the {pnoun} has been {adv} delayed by the {E} and a shortage of {things}.",
    "In {city}, where a similar {thing} was {vt_en} in {year}, {things} {vi_ed} by {pct} within a {unit}.",
    "{P2l} {say} {roles} had been asking for a {adj} {thing} for more than a decade.",
    "The money will come from a {adj} {thing} and from {money} in federal grants.",
    "Opponents plan to challenge the {T} at the next {event}, {P2l} {say}.",
    "The {Oc} has not yet said how the {T} will be paid for.",
    "Some {roles} worry that the {T} will push up {things} for {roles} who can least afford it.",
    "Others {say} the {T} was long overdue.",
    "The debate over the {T} is likely to continue well into {year}.",
    "Before joining {O}, {P1l} worked for {num} years as a {role} in {city}.",
    "A {doc_thing} published in {month} found that {pct} of {pnouns} in {region} needed urgent repairs.",
    "Traffic around the {pnoun} is expected to be heavy until the end of {month}.",
    "{P1l} {say} the {Oc} would study the {doc_thing} before making a final decision.",
    "Many {roles} learned about the {T} only through social media, {P2l} {say}.",
    "The {Oc} meets on the first {day} of every month at the {pnoun}.",
    "Officials {say} the {E} was the worst the {pnoun} had seen since {year}.",
    "Attendance at the {event} was lower than expected, with just {num} {roles} in the room.",
    '"We are asking for patience," {P1l} {say}. "The {T} will not be finished overnight."',
    '"I have lived here for {num} years and I have never seen anything like this," {P2l} {say}.',
    '"The numbers simply do not add up," {say} a {role} who has followed the {T} closely.',
    "The {Oc} will {vt} the {T} in {smallnum} stages, starting with the {pnoun} near {C}.",
    "A final vote on the {T} is expected in {month}.",
    "Funding for the {T} was cut by {pct} in {year}, and it has never fully recovered.",
    "{cname} won the contract to {vt} the {pnoun} after a {adj} bidding process.",
    "{P1} is expected to {vt} the {T} at a {event} on {day}.",
    "The {pnoun} has served {C} since {year}.",
    "Turnout at the {event} was {adj}, organizers {say}.",
    "The {T} has drawn support from {num} {orgs} and {num} {roles}.",
    "Those who want to take part can register at the {pnoun} until {day}.",
    "It remains to be seen whether the {T} will survive a legal challenge.",
    "More details are expected after the {event} next {unit}.",
    "The {Oc} did not say how many {roles} would be affected.",
]

PRODUCT_BODY = [
    "The {BRAND} {MODEL} is a {padj} {PROD} designed for {users}.",
    "It weighs just {weight} and comes with a {padj} {feat} that {pvp}.",
    "The {feat} {pvp}, and the {feat} {pvp}.",
    "Our customers love the {padj} {feat} and the {padj} {feat}.",
    "Please note that the {feat} is not compatible with older {PRODs}.",
    "This {PROD} is covered by a {smallnum}-year limited warranty.",
    "Available in {color}, {color} and {color}.",
    "Compared with the previous model, the {MODEL} has a {padj} {feat} and {pct} more battery life.",
    "Whether you use it for {users} or {users}, the {MODEL} is built to last.",
    "Every {PROD} is tested before it leaves our warehouse in {city}.",
    "The {feat} can be removed and washed by hand.",
    "It is one of the most {padj} {PRODs} we have tested this year.",
    "The box includes the {PROD}, a {feat}, a {padj} {feat} and a quick start guide.",
    "If the {feat} ever fails, we will send you a new one at no cost.",
    "Thanks to its {padj} {feat}, the {MODEL} {pvp}.",
    "We recommend charging the {feat} fully before the first use.",
    "Many buyers pair it with the {BRAND} {feat} for an even better fit.",
    "Orders placed before {hour} ship the same day from {city}.",
    "Setup takes about {smallnum} minutes and no tools are needed.",
    "The {feat} is made from {material} and {pvp}.",
    "At {weight}, it is light enough to carry all day.",
    "The {MODEL} replaces the {BRAND} {series} {dnum}, which sold out twice last year.",
    "Each {PROD} ships in plastic-free packaging.",
    "The {padj} design makes it a good fit for {users}.",
    "You can order spare parts for the {feat} directly from {BRAND}.",
    "The {feat} has been redesigned to be much easier to clean.",
    "Please read the safety instructions before using the {PROD} for the first time.",
    "The {PROD} is backed by our 30-day return policy.",
    "Need help choosing? Compare the {MODEL} with other {PRODs} in our buying guide.",
    "The {feat} and the {feat} are sold separately.",
]

PRODUCT_REVIEWS = [
    "I have used this {PROD} every day for {num} weeks and the {feat} still {pvp}.",
    "Great value for the price, although the {feat} could be a bit {padj}.",
    "Bought it for my {relative} and they love it.",
    "The {feat} stopped working after {num} months, but support replaced it quickly.",
    "Much better than my old {PROD}, the {feat} {pvp}.",
    "Not bad, but the {feat} feels cheaper than the photos suggest.",
    "Exactly as described. The {padj} {feat} is the best part.",
    "Would buy again. It {pvp} and the {feat} is very {padj}.",
    "Arrived quickly and was easy to set up.",
    "The {feat} broke after a week. Disappointed.",
    "Five stars. I bought a second one for my {relative}.",
    "Good {PROD}, but the instructions could be clearer.",
    "The {color} looks even better in person.",
    "It {pvp}, which is all I wanted.",
    "Returned it because the {feat} was too {padj} for me.",
    "After {num} months of daily use it still works like new.",
]

FORUM_QUESTION = [
    "I have a {qadj} problem with my {BRAND} {PROD} and I hope someone here can help.",
    "Since the last update it {fproblem}.",
    "Ever since I changed the {fthing} it {fproblem}.",
    "I already tried to {vf} the {fthing} and {vf} the {fthing}, but nothing changed.",
    "Has anyone else seen this after the {ver} update?",
    "The {MODEL} is about {num} months old and was working fine until last {day}.",
    "Support told me to {vf} the {fthing}, which I did twice.",
    "It happens even when the {fthing} is disabled.",
    "I am running version {ver} if that matters.",
    "Is this a known issue or should I send it back?",
    "Any ideas before I {vf} the whole thing?",
    "I would rather not lose my {fthing} if there is another way.",
    "It started about {smallnum} weeks ago, right after I moved the {PROD} to another room.",
    "I noticed it first on {day} evening.",
    "The light on the front blinks {smallnum} times and then nothing happens.",
    "I have the {BRAND} {MODEL} with the {ver} firmware.",
    "Warranty ran out last {month}, so I would like to fix it myself if possible.",
    "The logs show nothing useful, just a generic error.",
    "Resetting to factory settings did not help either.",
    "My {relative} has the same model and theirs works fine.",
    "I searched the forum but the old threads are about the previous model.",
]

FORUM_REPLY = [
    "I had the same issue last {unit}. What fixed it for me was to {vf} the {fthing} and then {vf} it again.",
    "Did you check the {fthing} in the {fthing} menu?",
    "Same here, it started right after the {ver} update.",
    "You might want to contact {BRAND} support, they replaced mine for free.",
    "Try holding the power button for {smallnum} seconds, that usually resets it.",
    "This is a known issue, there is a thread about it from {month}.",
    "Mine {fproblem} too. I ended up returning it.",
    "Make sure the {fthing} is up to date before you do anything else.",
    "It sounds like the {fthing} to me. Those fail a lot on the older {PRODs}.",
    "Thanks, that worked! I had to {vf} the {fthing} first.",
    "I would not {vf} the {fthing} yet, it voids the warranty on some models.",
    "Which {fthing} are you using? The one that came in the box?",
    "Post a photo of the {fthing} and we can take a look.",
    "Which version are you on? The {ver} release fixed this for most people.",
    "Could be a bad {fthing}. Try a different one before anything else.",
    "I gave up and bought a new {PROD}. Not worth the hassle.",
    "Support is slow but they do answer, it took me {smallnum} days.",
    "Check if the {fthing} is set to automatic. Mine was not.",
    "Same problem on my {MODEL}, following this thread.",
    "Unplug it for a full minute, then hold the reset button while plugging it back in.",
    "A firmware rollback to {ver} worked for me.",
    "Have you tried a different outlet? Sounds silly but it helped me.",
]

NEWS_TITLES = [
    "{O} {vt_s} {adj} {T}",
    "{C} {Oc} {vt_s} {T} after {adj} {event}",
    "{Roles} in {C} {vi} over {adj} {T}",
    "{Ts} {vi} as {O} {vt_s} {T}",
    "What the {adj} {T} means for {roles} in {C}",
    "{P1} {vt_s} {adj} {T} for {C}",
    "{C} {pnoun} to close for {smallnum} {units} during {T} work",
    "{O} faces questions over {adj} {T}",
    "Why {roles} in {C} are worried about the {T}",
]

PRODUCT_TITLES = [
    "{BRAND} {MODEL} {padj} {PROD} - {color}",
    "{BRAND} {MODEL} {PROD}, {padj}, {color}",
    "{padj} {PROD} {MODEL} by {BRAND}",
]

FORUM_TITLES = [
    "{BRAND} {PROD} {fproblem} after update",
    "Help: {MODEL} {fproblem}",
    "Question about the {fthing} on the {MODEL}",
    "{PROD} {fproblem}, any ideas?",
    "[{ver}] {MODEL} {fproblem}",
]

RELATED_TITLES = NEWS_TITLES[:7]

NEWS_HEADERS = [
    "Advertisement",
    "Sign up for our morning newsletter to get the day's top stories in your inbox.",
    "This story has been updated with new information.",
    "Share this article: Facebook | X | Email | Print",
    "Listen to this article (4 min)",
]
NEWS_FOOTERS = [
    "© {year} {outlet}. All rights reserved. Reproduction without written permission is not allowed.",
    "Have a tip? Contact our newsroom at any time. We read every message.",
    "This article originally appeared in the {outlet} and is republished with permission.",
    "Comments are closed for this story. Read our community guidelines.",
]
PRODUCT_HEADERS = [
    "Free delivery on orders over $35. Returns accepted within 30 days.",
    "Home > {PRODs} > {BRAND}",
    "Sale ends Sunday: save 15% with code SPRING.",
]
PRODUCT_FOOTERS = [
    "Questions? Our support team is available every day from 8am to 8pm.",
    "Prices include VAT. Delivery times may vary during holidays.",
    "Customers also viewed: {BRAND} {PROD}, {BRAND} {feat}, {padj} {PROD}",
]
FORUM_HEADERS = [
    "This thread has been moved to the {PROD} board.",
    "Welcome, guest! Please log in or register to reply.",
]
FORUM_FOOTERS = [
    "-- Sent from my phone",
    "Edit: fixed a typo.",
    "Last edited by a moderator.",
    "Posts: {num} | Joined: {year}",
]


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _nouns(entries):
    """Split "sing/plural" entries; return (singulars, plurals), order kept, no repeats."""
    sing, plur = [], []
    for entry in dict.fromkeys(entries):
        s, _, p = entry.partition("/")
        sing.append(s)
        plur.append(p or _plural(s))
    return sing, plur


def _verbs(entries):
    """Return (base, third, past, participle, ing) lists for verb entries."""
    out = ([], [], [], [], [])
    for entry in dict.fromkeys(entries):
        parts = entry.split("/")
        base = parts[0]
        if base.endswith(("s", "sh", "ch", "x", "z", "o")):
            third = base + "es"
        elif base.endswith("y") and base[-2] not in "aeiou":
            third = base[:-1] + "ies"
        else:
            third = base + "s"
        if len(parts) > 1:
            past, part = parts[1], parts[2]
        elif base.endswith("e"):
            past = part = base + "d"
        elif base.endswith("y") and base[-2] not in "aeiou":
            past = part = base[:-1] + "ied"
        else:
            past = part = base + "ed"
        if len(parts) > 3:
            ing = parts[3]
        elif base.endswith("ie"):
            ing = base[:-2] + "ying"
        elif base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
            ing = base[:-1] + "ing"
        else:
            ing = base + "ing"
        for lst, form in zip(out, (base, third, past, part, ing)):
            lst.append(form)
    return out


def _zipf_urn(words, exponent=1.0, size=None):
    """A list in which word i appears about size * (i+1)^-exponent / H times.

    Drawing a uniform element of the urn is a Zipf draw over ``words`` that costs
    one random number.
    """
    words = list(words)
    if size is None:
        size = 40 * len(words)
    weights = [1.0 / (i + 1) ** exponent for i in range(len(words))]
    scale = size / sum(weights)
    urn = []
    for w, weight in zip(words, weights):
        urn.extend([w] * max(1, round(weight * scale)))
    return urn


_ARTICLE_BEFORE = re.compile(r"(?:^|(?<=\s))[Aa] $")
_NOT_AN = ("uni", "use", "usu", "one", "eu", "Uni", "Use", "Eu")


def _article(word: str) -> str:
    """ "a" or "an" for ``word`` (by its first letters; good enough for this vocabulary)."""
    if word[:1] in "aeiouAEIOU" and not word.startswith(_NOT_AN):
        return "an "
    if word.startswith(("hour", "honest")):
        return "an "
    return "a "


def _compile(template: str):
    """Turn "a {x} b {y}" into ("{} b {}", ("x", "y"), words, needs_capital, (0,), key).

    A literal "a " right before a slot is taken out of the format string; the
    fifth item lists those slots, and rendering puts "a " or "an " in front of
    the word. ``key`` names the template (to avoid repeating it in a document).
    """
    parts = re.split(r"\{(\w+)\}", template)
    literals, slots = parts[0::2], tuple(parts[1::2])
    words = len(" ".join(literals).split()) + len(slots)
    needs_cap = template[:1] == "{"
    art = []
    for i in range(len(slots)):
        if _ARTICLE_BEFORE.search(literals[i]):
            if i == 0 and literals[0] == "A ":
                needs_cap = True
            literals[i] = literals[i][:-2]
            art.append(i)
    fmt = "{}".join(s.replace("{", "{{").replace("}", "}}") for s in literals)
    return fmt, slots, words, needs_cap, tuple(art), template


class Grammar:
    """All word urns and compiled templates; built once, deterministic."""

    def __init__(self):
        role, roles = _nouns(ROLES)
        org, orgs = _nouns(ORG_NOUNS)
        thing, things = _nouns(THINGS)
        pnoun, pnouns = _nouns(PLACE_NOUNS)
        event, events = _nouns(EVENTS)
        prod, prods = _nouns(PRODUCTS)
        self.fproducts, self.fproducts_pl = _nouns(FORUM_PRODUCTS)
        vt, vt_s, vt_ed, vt_en, vt_ing = _verbs(VERBS_T)
        vi, vi_s, vi_ed, vi_en, _ = _verbs(VERBS_I)
        vf, *_ = _verbs(VERBS_F)
        self.things, self.things_pl = thing, things
        self.events, self.events_pl = event, events
        self.orgs = org
        self.products, self.products_pl = prod, prods
        self.features = list(dict.fromkeys(FEATURES))
        self.brands = [h + t for h in BRAND_HEADS for t in BRAND_TAILS]
        # pair the verb forms: one index draw gives matching forms where needed
        self.urns = {
            "role": _zipf_urn(role),
            "roles": _zipf_urn(roles),
            "org": _zipf_urn(org),
            "orgs": _zipf_urn(orgs),
            "thing": _zipf_urn(thing),
            "things": _zipf_urn(things),
            "pnoun": _zipf_urn(pnoun),
            "pnouns": _zipf_urn(pnouns),
            "event": _zipf_urn(event),
            "events": _zipf_urn(events),
            "adj": _zipf_urn(dict.fromkeys(ADJECTIVES)),
            "adv": _zipf_urn(dict.fromkeys(ADVERBS)),
            "vt": _zipf_urn(vt),
            "vt_s": _zipf_urn(vt_s),
            "vt_ed": _zipf_urn(vt_ed),
            "vt_en": _zipf_urn(vt_en),
            "vt_ing": _zipf_urn(vt_ing),
            "vi": _zipf_urn(vi),
            "vi_s": _zipf_urn(vi_s),
            "vi_ed": _zipf_urn(vi_ed),
            "vi_en": _zipf_urn(vi_en),
            "vf": _zipf_urn(vf),
            "say": SAY,
            "city": _zipf_urn(CITIES, 0.8),
            "region": _zipf_urn([r.strip() for r in REGIONS if r.strip()], 0.7),
            "cname": [h + t + " " + s for h in BRAND_HEADS for t in BRAND_TAILS[:4] for s in COMPANY_SUFFIXES[:6]],
            "num": _zipf_urn(SMALL_NUMBERS, 0.9),
            "smallnum": ["one", "two", "two", "three", "five"],
            "pct": _zipf_urn([f"{i} percent" for i in range(2, 61)] + [f"{i}.5 percent" for i in range(1, 20)], 0.7),
            "money": [
                f"${a} {u}"
                for u in ("million", "million", "billion")
                for a in ("1.2", "3", "4.5", "12", "25", "40", "75", "150", "2.8", "600")
            ]
            + [f"${a},000" for a in ("450", "800", "90", "250")],
            "year": [str(y) for y in range(1990, 2025)],
            "day": DAYS,
            "month": MONTHS,
            "dnum": [str(d) for d in range(1, 29)],
            "unit": UNITS,
            "units": UNITS_PL,
            "period": PERIODS,
            "hour": HOURS,
            "ordinal": ORDINALS,
            "vote": [f"{a} to {b}" for a in range(4, 10) for b in range(1, 4)],
            "outlet": ["newspaper", "paper", "station", "site"],
            "padj": _zipf_urn(dict.fromkeys(PRODUCT_ADJ), 0.8),
            "feat": _zipf_urn(self.features, 0.8),
            "pvp": PRODUCT_PREDICATES,
            "users": USERS_FOR,
            "color": _zipf_urn(COLORS, 0.9),
            "weight": [f"{w} kg" for w in ("0.3", "0.45", "0.8", "1.1", "1.4", "2.2", "3.5")]
            + [f"{w} g" for w in ("180", "240", "350", "620")],
            "relative": [
                "wife",
                "husband",
                "son",
                "daughter",
                "dad",
                "mom",
                "sister",
                "brother",
                "partner",
                "neighbor",
            ],
            "fthing": _zipf_urn(dict.fromkeys(FORUM_THINGS), 0.8),
            "fproblem": FORUM_PROBLEMS,
            "lead_role": [
                "head",
                "director",
                "chair",
                "spokesperson",
                "chief executive",
                "president",
                "treasurer",
                "deputy director",
                "general manager",
            ],
            "doc_thing": ["report", "study", "survey", "analysis", "review", "audit", "poll", "assessment"],
            "vneg_en": [
                "criticized",
                "questioned",
                "challenged",
                "attacked",
                "opposed",
                "dismissed",
                "rejected",
                "condemned",
            ],
            "qadj": [
                "strange",
                "weird",
                "annoying",
                "recurring",
                "serious",
                "odd",
                "new",
                "frustrating",
                "small",
                "intermittent",
            ],
            "ver": [f"{a}.{b}" for a in range(1, 6) for b in range(10)]
            + [f"{a}.{b}.{c}" for a in range(2, 5) for b in range(4) for c in (1, 2)],
        }
        self.urns["Roles"] = [w.capitalize() for w in self.urns["roles"]]
        self.first_names = _zipf_urn(FIRST_NAMES, 0.6)
        self.surnames = _zipf_urn(dict.fromkeys(SURNAMES), 0.6)
        self.city_urn = self.urns["city"]
        self.thing_urn = _zipf_urn(range(len(thing)), 0.9)
        self.event_urn = _zipf_urn(range(len(event)))
        self.product_urn = _zipf_urn(range(len(prod)), 0.7)
        self.fproduct_urn = _zipf_urn(range(len(self.fproducts)), 0.7)
        self.org_urn = _zipf_urn(range(len(org)))
        self.fillers = FILLERS
        self.synonyms = SYNONYMS
        self.substitutes = self.urns["adj"]
        c = _compile
        self.news_leads = [c(t) for t in NEWS_LEADS]
        self.news_body = [c(t) for t in NEWS_BODY]
        self.product_body = [c(t) for t in PRODUCT_BODY]
        self.product_reviews = [c(t) for t in PRODUCT_REVIEWS]
        self.forum_question = [c(t) for t in FORUM_QUESTION]
        self.forum_reply = [c(t) for t in FORUM_REPLY]
        self.titles = {
            "news": [c(t) for t in NEWS_TITLES],
            "product": [c(t) for t in PRODUCT_TITLES],
            "forum": [c(t) for t in FORUM_TITLES],
        }
        self.related_titles = [c(t) for t in RELATED_TITLES]
        self.boiler = {
            "news": ([c(t) for t in NEWS_HEADERS], [c(t) for t in NEWS_FOOTERS]),
            "product": ([c(t) for t in PRODUCT_HEADERS], [c(t) for t in PRODUCT_FOOTERS]),
            "forum": ([c(t) for t in FORUM_HEADERS], [c(t) for t in FORUM_FOOTERS]),
        }

    def vocabulary_size(self) -> int:
        """Distinct word forms the grammar can emit (slot fillers and template words)."""
        words = set()
        for urn in self.urns.values():
            for item in urn:
                words.update(re.findall(r"[^\W\d_]+", str(item).lower()))
        for name in (FIRST_NAMES, SURNAMES, self.brands, PRODUCTS, FEATURES, SERIES):
            for item in name:
                words.update(re.findall(r"[^\W\d_]+", item.lower()))
        for group in (NEWS_LEADS, NEWS_BODY, PRODUCT_BODY, PRODUCT_REVIEWS, FORUM_QUESTION, FORUM_REPLY):
            for t in group:
                words.update(re.findall(r"[^\W\d_]+", re.sub(r"\{\w+\}", " ", t).lower()))
        return len(words)


_SLUG = re.compile(r"[^a-z0-9]+")


def _primes(start: int, count: int) -> list[int]:
    """The first ``count`` primes >= ``start`` (stream lengths that never line up)."""
    out, n = [], start
    while len(out) < count:
        if all(n % d for d in range(2, int(n**0.5) + 1)):
            out.append(n)
        n += 1
    return out


class Generator:
    """Makes documents and their variants.

    Randomness: one ``random.Random`` seeded from ``seed`` draws the word streams
    below; each block of 10,000 documents then gets its own ``random.Random``
    seeded from (seed, block number), which starts every stream at its own
    offset and makes all other choices. Blocks are thus independent of each
    other and can be made in parallel without changing a byte.

    Speed: every global slot (and every template list) is read from a "stream",
    a pre-drawn sequence of i.i.d. Zipf draws of prime length that is read in a
    cycle. Reading the next element costs one C call instead of a random number,
    a multiplication and an index; the streams have different prime lengths, so
    the combined sequence never repeats in practice.
    """

    STREAM_LENGTH = 20_011
    LOCAL_SLOTS = frozenset(
        {"P1", "P2", "P1l", "P2l", "C", "O", "Oc", "T", "Ts", "E", "E2s", "BRAND", "MODEL", "PROD", "PRODs", "outlet"}
    )

    def __init__(self, seed: int, dup_fraction: float = 0.2):
        if not 0.0 <= dup_fraction <= 0.6:
            raise ValueError(f"dup_fraction must be in [0, 0.6], got {dup_fraction}")
        self.seed = seed
        self.g = g = Grammar()
        self.dup_fraction = dup_fraction
        self.base_day = date(2015, 1, 1)
        lists = dict(g.urns)
        lists.update(
            {
                "t_news_leads": g.news_leads,
                "t_news_body": g.news_body,
                "t_product_body": g.product_body,
                "t_product_reviews": g.product_reviews,
                "t_forum_first": g.forum_question[:2],
                "t_forum_question": g.forum_question,
                "t_forum_reply": g.forum_reply,
                # cast members
                "first": g.first_names,
                "last": g.surnames,
                "thing_i": g.thing_urn,
                "event_i": g.event_urn,
                "org_i": g.org_urn,
                "prod_i": g.product_urn,
                "fprod_i": g.fproduct_urn,
                "brand": g.brands,
                "qual": ORG_QUALIFIERS,
                "series": SERIES,
                # page furniture
                "genre": [x for x, w in zip(GENRES, GENRE_WEIGHTS) for _ in range(round(w * 20))],
                "title_news": g.titles["news"],
                "title_product": g.titles["product"],
                "title_forum": g.titles["forum"],
                "feature": g.features,
                "material": MATERIALS,
                "cents": ("99", "95", "49", "00"),
                "reviewer": FIRST_NAMES,
                "opener": FORUM_OPENERS,
                "thanks": ("Thanks in advance.", "Any help is appreciated.", "Thanks!"),
                "site_city": CITIES,
                "outlet_word": OUTLET_WORDS,
                "store_word": STORE_WORDS,
                "forum_site": FORUM_SITE_WORDS,
                "section": ("local", "business", "politics", "world", "science", "sport"),
            }
        )
        local = self.LOCAL_SLOTS
        for name, items in lists.items():
            if name.startswith(("t_", "title_")):
                for _, slots, *_ in items:
                    missing = set(slots) - set(lists) - local
                    if missing:
                        raise RuntimeError(f"template slots without words: {sorted(missing)}")
        lengths = _primes(self.STREAM_LENGTH, len(lists))
        rnd = Random(f"neardup-corpus:{seed}:streams").random
        self.streams = {}
        for (name, items), length in zip(lists.items(), lengths):
            n = len(items)
            self.streams[name] = [items[int(rnd() * n)] for _ in range(length)]
        self.start_block(0)

    def start_block(self, index: int) -> None:
        """Reset the random state for block ``index``.

        Blocks depend only on (seed, index), never on each other, so they can be
        made in any order or in parallel and still give the same bytes.
        """
        self.rng = Random(f"neardup-corpus:{self.seed}:{index}")
        self.used = set()  # formats of the sentences of the current document
        self.rnd = rnd = self.rng.random
        self.nx = {}
        for name, lst in self.streams.items():
            k = int(rnd() * len(lst))
            self.nx[name] = cycle(lst[k:] + lst[:k]).__next__

    # -- small helpers ------------------------------------------------------
    def pick(self, seq):
        return seq[int(self.rnd() * len(seq))]

    def weighted(self, items, weights):
        x = self.rnd()
        acc = 0.0
        for item, w in zip(items, weights):
            acc += w
            if x < acc:
                return item
        return items[-1]

    @staticmethod
    def render(tpl, nx) -> str:
        fmt, slots, _, cap, art, _ = tpl
        vals = [nx[k]() for k in slots]
        for i in art:
            vals[i] = _article(vals[i]) + vals[i]
        s = fmt.format(*vals)
        if cap:
            s = s[0].upper() + s[1:]
        return s

    def name(self) -> str:
        return self.nx["first"]() + " " + self.nx["last"]()

    # -- the cast of one document --------------------------------------------
    def cast(self, genre: str):
        """The document's own people, place, organization and topic.

        Returns (cast, nx): plain values, and the slot readers with the
        document-local slots added to the global ones.
        """
        g, rnd, nx = self.g, self.rnd, self.nx
        city = nx["city"]()
        p1 = nx["first"]() + " " + nx["last"]()
        p2 = nx["first"]() + " " + nx["last"]()
        ti = nx["thing_i"]()
        ti2 = nx["thing_i"]()
        ei = nx["event_i"]()
        org = g.orgs[nx["org_i"]()]
        if rnd() < 0.5:
            oname = f"the {city} {nx['qual']()} {org.title()}"
        else:
            oname = nx["cname"]()
        topic = g.things[ti]
        topics = [topic, topic, nx["adj"]() + " " + topic, g.things[ti2]]
        k = int(rnd() * 4)
        nx = dict(nx)
        nx.update(
            {
                "P1": repeat(p1).__next__,
                "P2": repeat(p2).__next__,
                "P1l": repeat(p1.rsplit(" ", 1)[-1]).__next__,
                "P2l": repeat(p2.rsplit(" ", 1)[-1]).__next__,
                "C": repeat(city).__next__,
                "O": repeat(oname).__next__,
                "Oc": repeat(org).__next__,
                "T": cycle(topics[k:] + topics[:k]).__next__,
                "Ts": cycle((g.things_pl[ti], g.things_pl[ti2])).__next__,
                "E": repeat(g.events[ei]).__next__,
                "E2s": cycle((g.events_pl[ei], "talks", "delays", "debate")).__next__,
            }
        )
        cast = {"city": city}
        if genre != "news":
            if genre == "forum":
                pi = nx["fprod_i"]()
                prod, prods = g.fproducts[pi], g.fproducts_pl[pi]
            else:
                pi = nx["prod_i"]()
                prod, prods = g.products[pi], g.products_pl[pi]
            brand = nx["brand"]()
            model = f"{nx['series']()} {int(rnd() * 90) + 10}"
            cast["brand"] = brand
            nx.update(
                {
                    "BRAND": repeat(brand).__next__,
                    "MODEL": repeat(model).__next__,
                    "PROD": repeat(prod).__next__,
                    "PRODs": repeat(prods).__next__,
                }
            )
        return cast, nx

    # -- whole documents -----------------------------------------------------
    def target_words(self, genre: str) -> int:
        x = self.rnd()
        if genre == "forum":
            return 80 + int(380 * x**1.6)
        return 80 + int(520 * x**1.7)

    def _prose(self, nx, templates, n_words, lo, hi, first=None):
        """Paragraphs of lo..hi sentences until about ``n_words`` words.

        ``templates`` and ``first`` (for the very first sentence) are stream readers.
        """
        pars, words = [], 0
        rnd = self.rnd
        used = self.used
        span = hi - lo + 1
        pending = first  # reader for the very first sentence, if any
        while words < n_words:
            par = []
            for _ in range(lo + int(rnd() * span)):
                if pending is None:
                    fmt, slots, w, cap, art, key = templates()
                    if key in used:  # a second and third try before allowing a repeat
                        fmt, slots, w, cap, art, key = templates()
                        if key in used:
                            fmt, slots, w, cap, art, key = templates()
                else:
                    fmt, slots, w, cap, art, key = pending()
                    pending = None
                used.add(key)
                # inlined render(): this loop is the generator's hot spot
                if slots:
                    vals = [nx[k]() for k in slots]
                    for i in art:
                        vals[i] = _article(vals[i]) + vals[i]
                    s = fmt.format(*vals)
                    par.append(s[0].upper() + s[1:] if cap else s)
                else:
                    par.append(fmt)
                words += w
                if words >= n_words:
                    break
            pars.append([" ", par])
        self.prose_words = words
        return pars

    def news(self, cast, nx):
        n = self.target_words("news")
        pars = self._prose(nx, nx["t_news_body"], n, 1, 3, first=nx["t_news_leads"])
        if self.rnd() < 0.4:
            pars[0][1][0] = cast["city"].upper() + " - " + pars[0][1][0]
        return pars

    def product(self, cast, nx):
        n = self.target_words("product")
        render, rnd = self.render, self.rnd
        n_feats = 2 + int(rnd() * 4)
        n_reviews = int(rnd() * 7)
        # about 5 words a feature line, 16 for the specs, 13 a review
        intro = self._prose(nx, nx["t_product_body"], max(40, n - 5 * n_feats - 16 - 13 * n_reviews), 2, 4)
        feats = ["Features:"]
        feature, pvp = nx["feature"], nx["pvp"]
        for _ in range(n_feats):
            feats.append(f"- {feature().capitalize()}: {pvp()}")
        specs = [
            "Specifications:",
            f"Weight: {nx['weight']()}",
            f"Material: {nx['material']()}",
            f"Color: {nx['color']()}",
            f"Model number: {cast['brand'][:3].upper()}-{int(rnd() * 9000) + 1000}",
            f"Price: ${int(rnd() * 300) + 9}.{nx['cents']()}",
        ]
        pars = intro + [["\n", feats], ["\n", specs]]
        if n_reviews:
            reviews = ["Customer reviews:"]
            review, used = nx["t_product_reviews"], self.used
            for _ in range(n_reviews):
                tpl = review()
                if tpl[5] in used:
                    tpl = review()
                used.add(tpl[5])
                reviews.append(f'"{render(tpl, nx)}" - {nx["reviewer"]()}, {nx["city"]()}')
            pars.append(["\n", reviews])
        return pars

    def forum(self, cast, nx):
        n = self.target_words("forum")
        rnd = self.rnd
        opener = nx["opener"]()
        pars = self._prose(nx, nx["t_forum_question"], max(30, n // 3), 2, 4, first=nx["t_forum_first"])
        words = self.prose_words + 8
        first = pars[0][1][0]
        if opener.endswith((",", "but")) and not first.startswith("I "):
            pars[0][1][0] = first[0].lower() + first[1:]
        pars[0][1].insert(0, opener)
        pars[-1][1].append(nx["thanks"]())
        while words < n:
            reply = self._prose(nx, nx["t_forum_reply"], 12 + int(rnd() * 40), 1, 3)
            sents = [s for p in reply for s in p[1]]
            sents.insert(0, f"Reply from {self.username()}:")
            pars.append([" ", sents])
            words += self.prose_words + 3
        return pars

    def username(self) -> str:
        nx = self.nx
        if self.rnd() < 0.5:
            return f"{nx['reviewer']().lower()}{int(self.rnd() * 990) + 10}"
        return f"{nx['adj']()}_{nx['thing']()}"

    def site(self, genre: str):
        """(host name, display name) of a web site of this genre."""
        nx = self.nx
        if genre == "news":
            city, word = nx["site_city"](), nx["outlet_word"]()
            return f"www.{city.lower()}{word.lower()}.com", f"The {city} {word}"
        if genre == "product":
            brand, word = nx["brand"](), nx["store_word"]()
            return f"shop.{brand.lower()}{word}.com", f"{brand} {word.capitalize()}"
        word = nx["forum_site"]()
        return f"forum.{word}.org", f"{word.capitalize()} forum"

    def url(self, genre: str, site: str, title: str, day: date) -> str:
        slug = _SLUG.sub("-", title.lower()).strip("-")
        slug = "-".join(slug.split("-")[:9])
        n = int(self.rnd() * 900000) + 100000
        if genre == "news":
            section = self.nx["section"]()
            return f"https://{site[0]}/{section}/{day.year}/{day.month:02d}/{slug}"
        if genre == "product":
            return f"https://{site[0]}/p/{slug}-{n}"
        return f"https://{site[0]}/t/{slug}/{n}"

    def document(self):
        genre = self.nx["genre"]()
        self.used = set()
        cast, nx = self.cast(genre)
        pars = getattr(self, genre)(cast, nx)
        title = self.render(nx["title_" + genre](), nx)
        title = title[0].upper() + title[1:]
        day = self.base_day + timedelta(days=int(self.rnd() * 3650))
        return {"genre": genre, "nx": nx, "title": title, "pars": pars, "day": day, "site": self.site(genre)}

    # -- variants ------------------------------------------------------------
    def _word_edits(self, pars, rate):
        """Substitute, insert or delete words; about ``rate`` edits per word."""
        prose = [p for p in pars if p[0] == " "] or pars
        total = sum(s.count(" ") + 1 for p in prose for s in p[1])
        n_edits = max(1, int(total * rate + self.rnd()))
        for _ in range(n_edits):
            par = self.pick(prose)[1]
            i = int(self.rnd() * len(par))
            words = par[i].split(" ")
            j = int(self.rnd() * len(words))
            op = self.rnd()
            w = words[j]
            core = w.strip('.,"!?:;')
            if op < 0.45:
                new = self.g.synonyms.get(core.lower())
                if new is None:
                    if core.isdigit():
                        new = str(int(core) + 1 + int(self.rnd() * 3))
                    else:
                        new = self.pick(self.g.substitutes)
                words[j] = w.replace(core, new, 1) if core else new
            elif op < 0.75 or len(words) < 5:
                words.insert(j, self.pick(self.g.fillers))
            else:
                if w[-1:] in '.!?"' and j > 0:
                    words[j - 1] += w[len(core) :] if core else ""
                del words[j]
            par[i] = " ".join(words)

    def _drop_sentences(self, pars, n):
        for _ in range(n):
            candidates = [p for p in pars if p[0] == " " and len(p[1]) > 1]
            if not candidates:
                return
            par = self.pick(candidates)[1]
            del par[int(self.rnd() * len(par))]

    def _boilerplate(self, doc, pars, kind, site, day):
        headers, footers = self.g.boiler[doc["genre"]]
        urns = dict(doc["nx"])
        urns["outlet"] = repeat(site[1]).__next__
        urns["year"] = repeat(str(day.year)).__next__
        if kind == "header":
            pars.insert(0, [" ", [self.render(self.pick(headers), urns)]])
        elif kind == "footer":
            pars.append([" ", [self.render(self.pick(footers), urns)]])
        else:  # related links, with titles of other stories
            _, other = self.cast("news")
            lines = ["Related articles" if doc["genre"] == "news" else "You may also like"]
            for _ in range(3 + int(self.rnd() * 3)):
                t = self.render(self.pick(self.g.related_titles), other)
                lines.append(t[0].upper() + t[1:])
            pars.append(["\n", lines])

    def _format_noise(self, pars, title):
        """Changes that leave the lower-cased word sequence alone (or nearly)."""
        op = self.rnd()
        if op < 0.25:  # punctuation: drop commas in one paragraph, curly quotes
            par = self.pick(pars)[1]
            for i, s in enumerate(par):
                par[i] = s.replace(",", "").replace('"', "\u201c", 1).replace('"', "\u201d", 1)
        elif op < 0.45:  # one shouted sentence
            par = self.pick(pars)[1]
            i = int(self.rnd() * len(par))
            par[i] = par[i].upper()
        elif op < 0.65:  # title case change
            title = title.upper() if self.rnd() < 0.5 else title.lower()
        elif op < 0.85:  # dashes and exclamation
            par = self.pick(pars)[1]
            for i, s in enumerate(par):
                s = s.replace(" - ", " \u2014 ")
                par[i] = s[:-1] + "!" if s.endswith(".") and self.rnd() < 0.3 else s
        return title, op >= 0.85  # last case: whitespace changes at join time

    def _new_title(self, doc, title, site):
        op = self.rnd()
        if op < 0.3:
            return self.pick(("UPDATED: ", "Watch: ", "Opinion: ", "Live: ")) + title
        if op < 0.6:
            return title + " | " + site[1]
        if op < 0.8:
            return title + " - " + self.pick(("Latest news", "Report", "Update"))
        t = self.render(self.pick(self.g.titles[doc["genre"]]), doc["nx"])
        return t[0].upper() + t[1:]

    def variant(self, doc, edit):
        """A record built from ``doc`` with one edit strength."""
        pars = [[sep, list(items)] for sep, items in doc["pars"]]
        title = doc["title"]
        rnd = self.rnd
        messy_ws = False
        day, site = doc["day"], doc["site"]
        if edit == "exact" and rnd() < 0.4:  # the same page crawled twice
            url = doc["url"] + self.pick(("?utm_source=feed", "?ref=rss", "#comments", "?amp=1"))
        else:  # republished elsewhere a few days later
            day = day + timedelta(days=int(rnd() * 4))
            site = self.site(doc["genre"])
            url = self.url(doc["genre"], site, doc["title"], day)
        if edit == "light":
            self._word_edits(pars, 0.002 + 0.008 * rnd())
            title, messy_ws = self._format_noise(pars, title)
            if rnd() < 0.3:
                title = self._new_title(doc, title, site)
        elif edit == "medium":
            self._word_edits(pars, 0.01 + 0.015 * rnd())
            self._drop_sentences(pars, 1)
            self._boilerplate(doc, pars, self.pick(("header", "footer", "related")), site, day)
            title, messy_ws = self._format_noise(pars, title)
            if rnd() < 0.5:
                title = self._new_title(doc, title, site)
        elif edit == "heavy":
            self._word_edits(pars, 0.03 + 0.03 * rnd())
            self._drop_sentences(pars, 2 + int(rnd() * 2))
            body = pars[1:]
            self.rng.shuffle(body)
            pars[1:] = body
            nx = doc["nx"]
            extra = self._prose(nx, nx[self._templates[doc["genre"]]], 15 + int(rnd() * 25), 1, 2)
            pars.insert(1 + int(rnd() * len(pars)), extra[0])
            self._boilerplate(doc, pars, self.pick(("header", "footer", "related")), site, day)
            if rnd() < 0.5:
                self._boilerplate(doc, pars, self.pick(("header", "footer")), site, day)
            title = self._new_title(doc, title, site)
        return self.record(doc, title, self.join(pars, messy_ws), url, day)

    _templates = {"news": "t_news_body", "product": "t_product_body", "forum": "t_forum_reply"}

    def join(self, pars, messy_ws=False) -> str:
        if not messy_ws:
            text = "\n\n".join(sep.join(items) for sep, items in pars)
        else:
            sent_sep = self.pick(("  ", " \n", " "))
            par_sep = self.pick(("\n", "\n\n\n", "\n \n", "\r\n\r\n"))
            text = par_sep.join((sent_sep if sep == " " else sep).join(items) for sep, items in pars)
            text = text + self.pick(("\n", "  ", ""))
        return text

    @staticmethod
    def record(doc, title, text, url, day):
        return {"title": title, "text": text, "url": url, "published": day.isoformat()}

    def original(self, doc):
        doc["url"] = self.url(doc["genre"], doc["site"], doc["title"], doc["day"])
        doc["text"] = self.join(doc["pars"])
        return self.record(doc, doc["title"], doc["text"], doc["url"], doc["day"])

    # -- blocks --------------------------------------------------------------
    def block(self, index: int, n: int, n_variants: int, first_group: int):
        """``n`` shuffled (record, group, edit) triples with ``n_variants`` planted variants.

        Group numbers start at ``first_group``.
        """
        self.start_block(index)
        next_group = first_group
        clusters = []
        used = 0
        left = n_variants
        while left > 0 and used < n:
            k = min(self.weighted(CLUSTER_SIZES, CLUSTER_WEIGHTS), left, n - used - 1)
            if k <= 0:
                break
            clusters.append(k)
            used += k + 1
            left -= k
        rows = []
        for k in clusters:
            group = next_group
            next_group += 1
            doc = self.document()
            rows.append((self.original(doc), group, "original"))
            for _ in range(k):
                edit = self.weighted(EDIT_KINDS, EDIT_WEIGHTS)
                rows.append((self.variant(doc, edit), group, edit))
        while len(rows) < n:
            doc = self.document()
            rows.append((self.original(doc), next_group, "unique"))
            next_group += 1
        self.rng.shuffle(rows)
        return rows


def _plan(n_docs: int, dup_fraction: float, block: int = BLOCK):
    """(block index, first row, rows, planted variants) for every block."""
    plan = []
    for index, start in enumerate(range(0, n_docs, block)):
        n = min(block, n_docs - start)
        # variants planted so far follow round(dup_fraction * rows so far)
        n_var = round(dup_fraction * (start + n)) - round(dup_fraction * start)
        plan.append((index, start, n, n_var))
    return plan


_WORKER: Generator | None = None
_WIDTH = 6


def _init_worker(seed, dup_fraction, width):
    global _WORKER, _WIDTH
    gc.disable()  # only acyclic objects are made; collection would cost a third of the time
    _WORKER = Generator(seed, dup_fraction)
    _WIDTH = width


def _make_block(task):
    """One block as (corpus bytes, truth bytes)."""
    index, start, n, n_var = task
    rows = _WORKER.block(index, n, n_var, first_group=start)  # at most n groups a block
    width = _WIDTH
    lines, tlines = [], []
    for i, (rec, group, edit) in enumerate(rows, start=start):
        doc_id = f"doc-{i:0{width}d}"
        lines.append(_dumps({"id": doc_id, **rec}))
        # the same bytes orjson or json would write for this dict
        tlines.append(f'{{"id":"{doc_id}","group":"g-{group:0{width}d}","edit":"{edit}"}}'.encode())
    return b"\n".join(lines) + b"\n", b"\n".join(tlines) + b"\n"


def generate(
    n_docs: int, seed: int, out, truth=None, dup_fraction: float = 0.2, jobs: int = 1, block: int = BLOCK
) -> int:
    """Write ``n_docs`` JSONL records to the binary file ``out`` (and truth rows to ``truth``).

    ``jobs`` > 1 makes blocks in that many processes; the bytes are the same.
    ``block`` is the shuffle unit (documents per block); it changes the output.
    """
    if not 0.0 <= dup_fraction <= 0.6:
        raise ValueError(f"dup_fraction must be in [0, 0.6], got {dup_fraction}")
    width = max(6, len(str(n_docs - 1)))
    plan = _plan(n_docs, dup_fraction, block)
    jobs = max(1, min(jobs, len(plan)))
    if jobs == 1:
        gc_was_enabled = gc.isenabled()
        try:
            _init_worker(seed, dup_fraction, width)
            blocks = map(_make_block, plan)
            for corpus_bytes, truth_bytes in blocks:
                out.write(corpus_bytes)
                if truth is not None:
                    truth.write(truth_bytes)
        finally:
            if gc_was_enabled:
                gc.enable()
    else:
        import multiprocessing

        with multiprocessing.Pool(jobs, _init_worker, (seed, dup_fraction, width)) as pool:
            for corpus_bytes, truth_bytes in pool.imap(_make_block, plan):
                out.write(corpus_bytes)
                if truth is not None:
                    truth.write(truth_bytes)
    return n_docs


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=1000, help="number of documents (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("-o", "--output", required=True, help="corpus JSONL path ('-' for stdout)")
    ap.add_argument("--truth", help="write ground truth JSONL here")
    ap.add_argument(
        "--dup-fraction",
        type=float,
        default=0.2,
        help="fraction of documents that are planted variants of another (default 0.2)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="worker processes (default: one per CPU, at most 8); the output does not depend on it",
    )
    ap.add_argument("--stats", action="store_true", help="print speed and vocabulary size to stderr")
    args = ap.parse_args(argv)
    if args.jobs <= 0:
        args.jobs = min(8, os.cpu_count() or 1)
    args.jobs = max(1, min(args.jobs, -(-args.docs // BLOCK)))
    if args.docs < 1:
        ap.error("--docs must be at least 1")
    if not 0.0 <= args.dup_fraction <= 0.6:
        ap.error("--dup-fraction must be between 0 and 0.6")
    t0, c0 = time.perf_counter(), _cpu_seconds()
    out = sys.stdout.buffer if args.output == "-" else open(args.output, "wb")
    truth = open(args.truth, "wb") if args.truth else None
    try:
        n = generate(args.docs, args.seed, out, truth, args.dup_fraction, args.jobs)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
        if truth is not None:
            truth.close()
    if args.stats:
        dt, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        size = "" if args.output == "-" else f", {os.path.getsize(args.output) / 1e6:,.1f} MB"
        print(
            f"{n} documents in {dt:.2f} s wall ({n / dt:,.0f} docs/s) with {args.jobs} job(s); "
            f"CPU {cpu:.2f} s in all processes ({n / cpu:,.0f} docs per CPU-second){size}; "
            f"vocabulary {Grammar().vocabulary_size()} word forms",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
