"""Generate eval/factcheck.jsonl from real chunks of wiki/: python3 eval/make_factcheck.py (from the repo root)."""
import json, sys
from pathlib import Path
sys.path.insert(0, ".")
from rag.ingest import chunking

def chunk(ref):
    path, i = ref.split("#")
    chunks = chunking.chunk_page(Path("wiki", path).read_text(encoding="utf-8"))
    heading, content = chunks[int(i)]
    return {"path": path, "heading": heading, "chunk_index": int(i), "content": content}

RV = "vertraege/rahmenvertrag-elbe-systemhaus.md#"
KF = "vertraege/kuendigungsfristen-dienstleister.md#"
ML = "mail/cyrus-imap/mailbox-loeschen.md#"
MA = "mail/cyrus-imap/mailbox-anlegen.md#"
MQ = "mail/cyrus-imap/mailbox-quota.md#"
FB = "backup/fileserver-backup.md#"
DW = "backup/datei-wiederherstellen.md#"
HD = "allgemein/it-helpdesk.md#"
PR = "sicherheit/passwortrichtlinie.md#"
PZ = "sicherheit/passwort-zuruecksetzen.md#"
MG = "hardware/mobilgeraete.md#"
VW = "netzwerk/vpn-windows.md#"
VL = "netzwerk/vpn-linux.md#"
IP = "netzwerk/ip-adressplan.md#"
NL = "netzwerk/netzlaufwerke.md#"
WL = "netzwerk/wlan.md#"
SR = "server/serverraum-zutritt.md#"
ON = "hr-it/onboarding.md#"
LA = "hardware/laptop-austausch.md#"
ET = "hardware/ersatzteile.md#"
HO = "arbeitsplatz/homeoffice-ausstattung.md#"
SV = "mail/cyrus-imap/sieve-filter.md#"
MC = "mail/mail-client-einrichten.md#"
TE = "arbeitsplatz/telefonie.md#"
DR = "arbeitsplatz/drucker.md#"
ZF = "sicherheit/zwei-faktor-authentifizierung.md#"
DS = "sicherheit/datenschutz-und-datenpannen.md#"
SL = "vertraege/softwarelizenzen.md#"
IX = "index.md#"
SF = "mail/cyrus-imap/shared-folders.md#"
SW = "arbeitsplatz/software-bestellen.md#"

# (id, sources, answer, wrong claims ([] = correct), question, note)
CASES = [
    # -- correct answers: paraphrases, other formats, cited and uncited -------------------------------
    ("ok-frist-worte", [RV+"7"], "Der Rahmenvertrag kann mit einer Frist von drei Monaten zum Ende der Laufzeit gekündigt werden [1].", [], "", "Zahlwort"),
    ("ok-frist-para", [RV+"7"], "Laut § 7 beträgt die Kündigungsfrist 3 Monate zum Ende der Laufzeit [1].", [], "", "§ aus der Überschrift"),
    ("ok-pauschale", [RV+"4"], "Die monatliche Pauschale liegt bei 4850 € zuzüglich Umsatzsteuer [1].", [], "", "1.000 ↔ 1000, Euro ↔ €"),
    ("ok-pauschale-komma", [RV+"4"], "Die Pauschale beträgt 4.850,00 EUR im Monat [1].", [], "", "Nachkommastellen"),
    ("ok-skonto", [RV+"4"], "Rechnungen sind binnen 30 Tagen zu zahlen; wer innerhalb von zehn Tagen zahlt, darf 2 % Skonto abziehen [1].", [], "", "Prozent ↔ %"),
    ("ok-stundensatz", [RV+"3"], "Zusätzliche Leistungen kosten 95 EUR netto pro Stunde, außerhalb der Servicezeiten mit 50 % Zuschlag [1].", [], "", ""),
    ("ok-einsaetze", [RV+"3"], "Enthalten sind bis zu acht Vor-Ort-Einsätze im Monat, jeweils bis zu vier Stunden [1].", [], "", "Zahlwörter"),
    ("ok-wartungsfenster", [RV+"3"], "Gepatcht wird am zweiten Dienstag im Monat zwischen 19 und 23 Uhr [1].", [], "", "19:00 ↔ 19 Uhr"),
    ("ok-beginn", [RV+"2"], "Der Vertrag begann am 01.04.2022 und lief zunächst zwei Jahre fest [1].", [], "", "Datum anders, 24 Monate ↔ zwei Jahre"),
    ("ok-beginn-iso", [RV+"2"], "Vertragsbeginn war der 2022-04-01; danach verlängert er sich jeweils um ein Jahr [1].", [], "", "ISO-Datum, 12 Monate ↔ ein Jahr"),
    ("ok-haftung", [RV+"6"], "Bei leichter Fahrlässigkeit haftet die Auftragnehmerin höchstens mit 250 Tsd. Euro je Schadensfall [1].", [], "", "Tsd."),
    ("ok-haftung-2", [RV+"6"], "Die Haftung ist bei leichter Fahrlässigkeit auf 250.000 € je Schaden begrenzt [1].", [], "", ""),
    ("ok-reaktion", [RV+"5"], "Bei Priorität 1 muss innerhalb einer Stunde reagiert werden, die Wiederherstellung ist in vier Stunden angestrebt [1].", [], "", "einer Stunde"),
    ("ok-minderung", [RV+"5"], "Wird die Reaktionszeit bei Priorität 1 öfter als zweimal im Monat überschritten, sinkt die Pauschale um zehn Prozent [1].", [], "", "zehn Prozent"),
    ("ok-avv", [RV+"8"], "Der Vertrag zur Auftragsverarbeitung stammt vom 15.03.2022 [1].", [], "", "1. März ↔ 01.03."),
    ("ok-avv-text", [RV+"8"], "Es gilt der AVV vom 15. März 2022 [1].", [], "", ""),
    ("ok-leasing", [KF+"1"], "Das Leasing der Multifunktionsgeräte läuft fest bis zum 31. August 2027; kündigen muss man sechs Monate vor Ablauf [1].", [], "", "Monatsname statt Zahl"),
    ("ok-telefonanlage", [KF+"1"], "Die Wartung der Telefonanlage ist mit einem Monat Frist zum Monatsende kündbar [1].", [], "", "einem Monat"),
    ("ok-glasfaser", [KF+"1"], "Der Internetanschluss verlängert sich jährlich zum 30. September und ist mit 3 Monaten Frist kündbar [1].", [], "", "30.09. ↔ 30. September"),
    ("ok-mobilfunk", [KF+"1"], "Die 42 Mobilfunkkarten haben je zwei Jahre Mindestlaufzeit [1].", [], "", "24 Monate ↔ zwei Jahre"),
    ("ok-erinnerung", [KF+"2"], "Die Erinnerung kommt 2 Monate vor dem letzten möglichen Kündigungstag [1].", [], "", "zwei ↔ 2"),
    ("ok-mailbox-90", [ML+"1"], "Nach dem Austrittsdatum bleibt die Mailbox noch 90 Tage bestehen [1].", [], "", ""),
    ("ok-renm", [ML+"3"], "Eine gelöschte Mailbox lässt sich noch zwei Wochen lang mit `renm` zurückholen [1].", [], "", "14 Tage ↔ zwei Wochen"),
    ("ok-cron", [ML+"3"], "Der Cronjob läuft um 3:30 Uhr und ruft `cyr_expire -D 14` auf [1].", [], "", "03:30 ↔ 3:30"),
    ("ok-loeschen-cmd", [ML+"2"], "Erst `sam user/peter.hansen cyrus x`, dann `dm user/peter.hansen` [1].", [], "", "Befehle"),
    ("ok-quota-cmd", [MA+"3", MA+"4"], "Die Standard-Quota setzt man mit `sq user/jana.kruse 2048000` [2].", [], "", "Befehl aus dem Codeblock"),
    ("ok-cm-platzhalter", [MA+"2", MA+"3"], "Angelegt wird mit `cm user/vorname.nachname` [1][2].", [], "", "Befehlswörter aus zwei Quellen"),
    ("ok-cyradm", [MA+"4"], "Auf dem Server `cyradm --user cyrus localhost` starten und das Passwort aus dem Tresor eingeben [1].", [], "", ""),
    ("ok-quota-kb", [MQ+"1"], "Führungskräfte und Vertrieb bekommen 5 GB, in cyradm 5120000 KB [1].", [], "", "KB aus dem Tabellenkopf"),
    ("ok-hoechstwert", [MQ+"1"], "Der Höchstwert liegt bei zehn GB und braucht eine schriftliche Freigabe der Geschäftsführung [1].", [], "", "zehn GB"),
    ("ok-quotawarn", [MQ+"4"], "Ab 90 % Belegung warnt Thunderbird, bei 100 Prozent nimmt Cyrus keine Mails mehr an [1].", [], "", ""),
    ("ok-zustellung", [MQ+"4"], "Der Absender-Server versucht die Zustellung bis zu 5 Tage lang erneut [1].", [], "", "fünf ↔ 5"),
    ("ok-aufbewahrung", [FB+"3"], "Monatssicherungen werden ein Jahr aufbewahrt, die Jahressicherung zehn Jahre [1].", [], "", "12 Monate ↔ ein Jahr"),
    ("ok-vollsicherung-tage", [FB+"3"], "Wöchentliche Vollsicherungen bleiben 84 Tage erhalten [1].", [], "", "12 Wochen ↔ 84 Tage"),
    ("ok-zeitplan", [FB+"2"], "Die Vollsicherung läuft samstags um 2 Uhr, die inkrementelle Sicherung montags bis freitags um 22 Uhr [1].", [], "", ""),
    ("ok-schattenkopien", [DW+"1"], "Schattenkopien entstehen um 7 und um 12 Uhr und bleiben zehn Tage erhalten [1].", [], "", "07:00 ↔ 7"),
    ("ok-servicezeiten", [HD+"2"], "Der Helpdesk ist montags bis donnerstags von 7:30 bis 17:00 Uhr besetzt, freitags bis 15 Uhr [1].", [], "", ""),
    ("ok-feiertage", [HD+"2"], "Am 24.12. und am 31.12. ist der Helpdesk geschlossen [1].", [], "", "24. und 31. Dezember ↔ 24.12."),
    ("ok-p1", [HD+"4"], "P1-Tickets bekommen binnen einer halben Stunde eine erste Rückmeldung [1].", [], "", "30 Minuten ↔ halbe Stunde"),
    ("ok-durchwahl", [HD+"1"], "Telefonisch erreichen Sie den Helpdesk unter der Durchwahl 4711 [1].", [], "", ""),
    ("ok-kontosperre", [PR+"3"], "Nach fünf Fehlversuchen in 15 Minuten wird das Konto für eine halbe Stunde gesperrt [1].", [], "", ""),
    ("ok-laenge", [PR+"1"], "Persönliche Passwörter brauchen mindestens zwölf Zeichen, Administratorkonten 16 [1].", [], "", ""),
    ("ok-einmalpasswort", [PZ+"2"], "Das Einmalpasswort vom Helpdesk gilt einen Tag [1].", [], "", "24 Stunden ↔ einen Tag"),
    ("ok-verlust", [MG+"3"], "Ein verlorenes Diensthandy muss spätestens nach vier Stunden gemeldet werden [1].", [], "", ""),
    ("ok-vpn-sitzung", [VW+"2"], "Eine VPN-Sitzung endet nach einem halben Tag automatisch [1].", [], "", "12 Stunden ↔ halber Tag"),
    ("ok-uhrzeit", [VW+"3"], "Weicht die Uhr mehr als 30 Sekunden ab, werden Einmalcodes abgelehnt; das TCP-Profil nutzt Port 443 [1].", [], "", ""),
    ("ok-ovpn", [VL+"2"], "Das Profil nutzt `proto udp` und `remote vpn.nordlicht-logistik.de 1194` [1].", [], "", "Befehle aus dem Profil"),
    ("ok-vlan", [IP+"1"], "Das Client-VLAN 20 hat das Netz 10.20.20.0/23 mit dem Gateway 10.20.20.1 [1].", [], "", "IP-Adressen"),
    ("ok-lease", [IP+"2"], "Die Lease-Dauer beträgt im Client-VLAN 8 Tage, im Gast-WLAN 4 Stunden [1].", [], "", "acht ↔ 8"),
    ("ok-laufwerke", [NL+"1"], "Auf H: hat jede Person 10 GB, eine Abteilung auf G: 200 GB [1].", [], "", ""),
    ("ok-gutschein", [WL+"2"], "Ein Gutschein gilt einen Tag ab der ersten Anmeldung und für bis zu 3 Geräte [1].", [], "", "24 Stunden ↔ einen Tag"),
    ("ok-serverraum", [SR+"3"], "Die Klimaanlage hält 22 Grad; über 28 °C wird alarmiert und ab 35 Grad fahren Server herunter. Die USV hält etwa 25 Minuten [1].", [], "", "°C ↔ Grad"),
    ("ok-checkliste", [ON+"14"], "Die IT legt Konto und Mailbox fünf Arbeitstage vor dem Eintritt an; die Sicherheitsschulung muss binnen 14 Kalendertagen abgeschlossen sein [1].", [], "", ""),
    ("ok-schulung", [ON+"12"], "Das E-Learning dauert etwa 45 Minuten; nach 30 Tagen ohne Abschluss wird der VPN-Zugang gesperrt. Von zehn Testfragen müssen acht stimmen [1].", [], "", ""),
    ("ok-azubis", [ON+"15"], "Die Auszubildenden beginnen jedes Jahr am 01.08. [1].", [], "", "1. August ↔ 01.08."),
    ("ok-uebergabe", [ON+"9"], "Neue Mitarbeitende kommen um 9 Uhr in Raum 2.14; die Übergabe dauert anderthalb Stunden [1].", [], "", "90 Minuten ↔ anderthalb Stunden"),
    ("ok-laptop", [LA+"1"], "Standard ist das ThinkPad T14 Gen 4 mit 32 GB RAM und 1 TB SSD; ersetzt wird nach 4 Jahren [1].", [], "", ""),
    ("ok-leihgeraet", [LA+"3"], "Leihgeräte gibt es für höchstens 4 Wochen, reserviert werden sie 5 Arbeitstage im Voraus [1].", [], "", ""),
    ("ok-netzteil", [ET+"2"], "Vom USB-C-Netzteil mit 65 W hält die IT mindestens fünf Stück vor [1].", [], "", ""),
    ("ok-garantie", [ET+"4"], "Lenovo-Laptops haben 3 Jahre Vor-Ort-Garantie ab Kaufdatum [1].", [], "", ""),
    ("ok-homeoffice", [HO+"1", HO+"2"], "Zum Paket gehört ein 27-Zoll-Monitor (Dell P2723DE); nach Hause geschickt wird nur ab 50 km Entfernung [1][2].", [], "", ""),
    ("ok-schaeden", [HO+"3"], "Schäden und Diebstahl meldet man innerhalb von 3 Arbeitstagen per Ticket [1].", [], "", ""),
    ("ok-vacation", [SV+"4"], "Mit `:days 3` erhält derselbe Absender höchstens alle drei Tage eine Antwort [1].", [], "", ""),
    ("ok-sieve-groesse", [SV+"5"], "Ein Sieve-Skript darf höchstens 32 KB groß sein [1].", [], "", ""),
    ("ok-ports", [MC+"1"], "IMAP läuft über Port 993 mit SSL/TLS, SMTP über Port 587 mit STARTTLS [1].", [], "", ""),
    ("ok-anhaenge", [MC+"3"], "Eine Mail darf höchstens 25 MB groß sein; Freigabelinks laufen nach zwei Wochen ab [1].", [], "", "14 Tage ↔ zwei Wochen"),
    ("ok-sprachmailbox", [TE+"3"], "Die Sprachmailbox erreicht man unter 8000; die neue PIN muss 6-stellig sein [1].", [], "", "sechsstellig ↔ 6-stellig"),
    ("ok-umleitung", [TE+"4"], "Umleiten mit `*21*4500#`, aufheben mit `#21#` [1].", [], "", ""),
    ("ok-follow-me", [DR+"2"], "Nicht abgeholte Follow-Me-Aufträge löscht der Druckserver nach acht Stunden [1].", [], "", ""),
    ("ok-spooler", [DR+"3"], "Die IT stoppt den Spooler mit `Stop-Service -Name Spooler -Force` [1].", [], "", ""),
    ("ok-2fa", [ZF+"0", ZF+"3"], "Die App erzeugt alle 30 Sekunden einen 6-stelligen Code; dazu gibt es 10 Notfallcodes [1][2].", [], "", ""),
    ("ok-datenpanne", [DS+"2"], "Datenpannen müssen binnen eines Tages gemeldet werden; die Aufsichtsbehörde muss nach Art. 33 DSGVO innerhalb von drei Tagen informiert sein [1].", [], "", "24/72 Stunden ↔ Tage"),
    ("ok-auskunft", [DS+"3"], "Auskünfte nach Art. 15 DSGVO müssen innerhalb eines Monats beantwortet werden [1].", [], "", ""),
    ("ok-lizenzen", [SL+"1"], "Es gibt 260 Office-Lizenzen und 25 Acrobat-Pro-Abonnements [1].", [], "", ""),
    ("ok-adresse", [IX+"1"], "Die Zentrale liegt in der Hafenrandstraße 17, 20457 Hamburg; das Unternehmen hat rund 250 Mitarbeitende [1].", [], "", ""),
    ("ok-shared-quota", [SF+"2"], "Gemeinsame Ordner bekommen standardmäßig 10 GB: `sq shared/zoll 10240000` [1].", [], "", ""),
    ("ok-software", [SW+"2"], "Vom Ticket bis zur Installation vergehen meist 5 Arbeitstage [1].", [], "", "fünf ↔ 5"),
    ("ok-uncited", [RV+"7", RV+"4"], "Die Kündigungsfrist beträgt drei Monate zum Laufzeitende.", [], "", "ohne Zitat: alle Quellen"),
    ("ok-cited-second", [RV+"4", RV+"7"], "Der Rahmenvertrag ist mit 3 Monaten Frist kündbar [2].", [], "", "zitiert die zweite Quelle"),
    ("ok-question-number", [RV+"7"], "Nein, nicht 14 Tage: Die Frist beträgt 3 Monate [1].", [], "Stimmt es, dass die Kündigungsfrist 14 Tage beträgt?", "Zahl aus der Frage"),
    ("ok-zweiter-dienstag", [RV+"3"], "Das Wartungsfenster ist am 2. Dienstag im Monat ab 19.00 Uhr [1].", [], "", "zweiter ↔ 2., 19:00 ↔ 19.00 Uhr"),
    ("ok-vierteljahr", [RV+"7"], "Gekündigt werden kann mit einem Vierteljahr Vorlauf zum Ende der Laufzeit [1].", [], "", "3 Monate ↔ ein Vierteljahr"),
    ("ok-72-std", [DS+"2"], "Die Behörde muss binnen 72 Std. informiert werden [1].", [], "", "Stunden ↔ Std."),
    ("ok-servicezeiten-kurz", [RV+"5"], "Die Servicezeiten sind Mo–Fr 7–18 Uhr [1].", [], "", "7:00 bis 18:00 ↔ 7–18 Uhr"),
    ("ok-raum", [ET+"1"], "Die Ersatzteile liegen in Raum U.12 im Untergeschoss; die Hauspost fährt um 14 Uhr [1].", [], "", "Raumnummer"),
    ("ok-quota-klammer", [MQ+"1"], "Standard sind 2 GB (2.048.000 KB) [1].", [], "", "Tausenderpunkte, KB aus dem Tabellenkopf"),
    ("ok-ersatztoner", [DR+"4"], "Ein Ersatztoner liegt im Kopierraum im 1. OG; Toner kommt binnen zwei Arbeitstagen [1].", [], "", ""),
    ("ok-ubuntu", [VL+"0"], "Getestet sind Ubuntu 22.04 LTS und 24.04 LTS [1].", [], "", "Versionsnummern"),
    ("ok-2fa-faktor", [ZF+"0"], "Zusätzlich zum Passwort wird ein sechsstelliger Einmalcode abgefragt, der alle halbe Minute neu entsteht [1].", [], "", ""),
    ("ok-lizenzpruefung", [SL+"3"], "Die Lizenzprüfung findet jedes Jahr im November statt [1].", [], "", "kein Zahlwort: nichts zu prüfen"),
    ("ok-approx-90", [WL+"3"], "Ein Dauer-Gutschein gilt drei Monate [1].", [], "", "Näherung: 90 Tage ≈ drei Monate (bekannte Grenze)"),
    ("ok-computed", [RV+"4"], "Bei 4.850 Euro Pauschale spart das Skonto von 2 Prozent 97 Euro [1].", [], "", "errechnete Zahl (bekannte Grenze)"),
    # -- wrong answers: a wrong number, date, duration, § or command ----------------------------------
    ("w-frist-14", [RV+"7"], "Die Kündigungsfrist beträgt 14 Tage [1].", ["14 Tage"], "", "14 Tage statt 3 Monate"),
    ("w-frist-zwei", [RV+"7"], "Der Vertrag ist mit zwei Monaten Frist kündbar [1].", ["zwei Monaten"], "", ""),
    ("w-frist-wochen", [RV+"7", RV+"4"], "Die Frist beträgt sechs Wochen.", ["sechs Wochen"], "", "ohne Zitat"),
    ("w-para-5", [RV+"7"], "Nach § 5 ist der Vertrag mit drei Monaten Frist kündbar [1].", ["§ 5"], "", "§ 5 statt § 7"),
    ("w-para-abs", [RV+"7"], "Das regelt § 7 Abs. 3 des Rahmenvertrags [1].", ["§ 7 Abs. 3"], "", "erfundener Absatz"),
    ("w-pauschale", [RV+"4"], "Die monatliche Pauschale beträgt 4.580 Euro netto [1].", ["4.580 Euro"], "", "Zahlendreher"),
    ("w-skonto", [RV+"4"], "Bei Zahlung innerhalb von 10 Tagen gibt es 3 % Skonto [1].", ["3 %"], "", ""),
    ("w-zahlungsziel", [RV+"4"], "Rechnungen sind innerhalb von 14 Tagen zu zahlen [1].", ["14 Tagen"], "", ""),
    ("w-stundensatz", [RV+"3"], "Zusätzliche Leistungen kosten 85 Euro pro Stunde [1].", ["85 Euro"], "", ""),
    ("w-einsaetze", [RV+"3"], "Es sind bis zu zehn Vor-Ort-Einsätze pro Monat enthalten [1].", ["zehn Vor-Ort-Einsätze"], "", ""),
    ("w-beginn", [RV+"2"], "Der Vertrag begann am 1. April 2023 [1].", ["1. April 2023"], "", "falsches Jahr"),
    ("w-erstlaufzeit", [RV+"2"], "Die feste Erstlaufzeit beträgt 36 Monate [1].", ["36 Monate"], "", ""),
    ("w-haftung", [RV+"6"], "Die Haftung ist auf 500.000 Euro je Schadensfall begrenzt [1].", ["500.000 Euro"], "", ""),
    ("w-reaktion", [RV+"5"], "Bei Priorität 1 beträgt die Reaktionszeit 2 Stunden [1].", ["2 Stunden"], "", ""),
    ("w-minderung", [RV+"5"], "Die Pauschale mindert sich dann um 20 Prozent [1].", ["20 Prozent"], "", ""),
    ("w-avv-tag", [RV+"8"], "Der AVV ist vom 16. März 2022 [1].", ["16. März 2022"], "", "ein Tag daneben"),
    ("w-avv-jahr", [RV+"8"], "Der AVV ist vom 15.03.2021 [1].", ["15.03.2021"], "", ""),
    ("w-leasing", [KF+"1"], "Das Leasing läuft fest bis 31.08.2026 [1].", ["31.08.2026"], "", ""),
    ("w-glasfaser-datum", [KF+"1"], "Der Glasfaservertrag verlängert sich jährlich zum 30.10. [1].", ["30.10."], "", ""),
    ("w-mobilfunk", [KF+"1"], "Es gibt 48 Mobilfunkkarten mit je 24 Monaten Laufzeit [1].", ["48 Mobilfunkkarten"], "", ""),
    ("w-telefon-hart", [KF+"1"], "Die Wartung der Telefonanlage ist mit 3 Monaten Frist kündbar [1].", ["3 Monaten"], "", "richtige Zahl einer anderen Zeile (bekannte Grenze)"),
    ("w-mailbox-60", [ML+"1"], "Die Mailbox bleibt nach dem Austritt noch 60 Tage bestehen [1].", ["60 Tage"], "", ""),
    ("w-expire", [ML+"3"], "Der Cronjob ruft `cyr_expire -D 7` auf und entfernt gelöschte Mailboxen nach 7 Tagen [1].", ["`cyr_expire -D 7`", "7 Tagen"], "", "falscher Befehl"),
    ("w-cron-zeit", [ML+"3"], "Der Cronjob läuft nachts um 04:30 Uhr [1].", ["04:30 Uhr"], "", ""),
    ("w-sam-recht", [ML+"2"], "Vor dem Löschen `sam user/peter.hansen cyrus d` setzen [1].", ["`sam user/peter.hansen cyrus d`"], "", "falsches Recht"),
    ("w-sq-wert", [MA+"4"], "Die Standard-Quota setzt man mit `sq user/jana.kruse 1024000` [1].", ["`sq user/jana.kruse 1024000`"], "", ""),
    ("w-cyradm-user", [MA+"4"], "Starten Sie `cyradm --user admin localhost` [1].", ["`cyradm --user admin localhost`"], "", ""),
    ("w-quota-fk", [MQ+"1"], "Führungskräfte bekommen 8 GB Quota [1].", ["8 GB"], "", ""),
    ("w-quota-fk-hart", [MQ+"1"], "Führungskräfte und Vertrieb bekommen 10 GB [1].", ["10 GB"], "", "richtige Zahl einer anderen Zeile (bekannte Grenze)"),
    ("w-quotawarn", [MQ+"4"], "Ab 80 % Belegung warnt Thunderbird [1].", ["80 %"], "", ""),
    ("w-zustellung", [MQ+"4"], "Die Zustellung wird bis zu 7 Tage lang erneut versucht [1].", ["7 Tage"], "", ""),
    ("w-monatsbaender", [FB+"3"], "Monatssicherungen auf Band werden 24 Monate aufbewahrt [1].", ["24 Monate"], "", ""),
    ("w-inkrementell", [FB+"3"], "Inkrementelle Sicherungen werden zwei Wochen aufbewahrt [1].", ["zwei Wochen"], "", ""),
    ("w-vollsicherung-zeit", [FB+"2"], "Die Vollsicherung läuft samstags um 3 Uhr [1].", ["3 Uhr"], "", ""),
    ("w-schattenkopien", [DW+"1"], "Schattenkopien bleiben 14 Tage erhalten [1].", ["14 Tage"], "", ""),
    ("w-freitag", [HD+"2"], "Freitags ist der Helpdesk bis 16:00 Uhr besetzt [1].", ["16:00 Uhr"], "", ""),
    ("w-p2", [HD+"4"], "Bei P2 kommt die erste Rückmeldung innerhalb von 4 Stunden [1].", ["4 Stunden"], "", ""),
    ("w-rufbereitschaft", [HD+"3"], "Die Rufbereitschaft erreichen Sie unter der Durchwahl 4711 [1].", ["4711"], "", "Nummer des Helpdesks statt 4799"),
    ("w-fehlversuche", [PR+"3"], "Nach 3 Fehlversuchen wird das Konto gesperrt [1].", ["3 Fehlversuchen"], "", ""),
    ("w-sperrdauer", [PR+"3"], "Die Sperre hebt sich nach 60 Minuten auf [1].", ["60 Minuten"], "", ""),
    ("w-adminlaenge", [PR+"1"], "Administratorkonten brauchen mindestens 14 Zeichen [1].", ["14 Zeichen"], "", ""),
    ("w-sms-code", [PZ+"1"], "Der SMS-Code ist 5 Minuten gültig [1].", ["5 Minuten"], "", ""),
    ("w-verlust", [MG+"3"], "Ein Verlust muss innerhalb von 24 Stunden gemeldet werden [1].", ["24 Stunden"], "", ""),
    ("w-vpn-sitzung", [VW+"2"], "Eine VPN-Sitzung endet nach 8 Stunden [1].", ["8 Stunden"], "", ""),
    ("w-tcp-port", [VW+"3"], "Das Profil Nordlicht-TCP läuft über Port 8443 [1].", ["8443"], "", ""),
    ("w-ovpn-port", [VL+"2"], "Im Profil steht `remote vpn.nordlicht-logistik.de 443` [1].", ["`remote vpn.nordlicht-logistik.de 443`"], "", ""),
    ("w-gateway", [IP+"1"], "Das Gateway des Server-VLANs ist 10.20.10.254 [1].", ["10.20.10.254"], "", ""),
    ("w-lease", [IP+"2"], "Im Client-VLAN beträgt die Lease-Dauer 8 Stunden [1].", ["8 Stunden"], "", "Einheit falsch"),
    ("w-scans", [NL+"1"], "Scans auf S: werden nach 14 Tagen gelöscht [1].", ["14 Tagen"], "", ""),
    ("w-gutschein", [WL+"2"], "Ein Gäste-Gutschein gilt 48 Stunden [1].", ["48 Stunden"], "", ""),
    ("w-serverraum", [SR+"3"], "Ab 30 °C fahren die Server automatisch herunter [1].", ["30 °C"], "", ""),
    ("w-meldefrist", [ON+"2"], "Die Personalabteilung meldet einen Eintritt 5 Arbeitstage vorher [1].", ["5 Arbeitstage"], "", ""),
    ("w-meldefrist-hart", [ON+"14"], "Die Eintrittsmeldung kommt 5 Arbeitstage vor dem Eintritt [1].", ["5 Arbeitstage"], "", "richtige Zahl einer anderen Zeile (bekannte Grenze)"),
    ("w-schulung", [ON+"12"], "Die Sicherheitsschulung muss innerhalb von 21 Kalendertagen abgeschlossen sein [1].", ["21 Kalendertagen"], "", ""),
    ("w-azubis", [ON+"15"], "Die Auszubildenden beginnen am 1. September [1].", ["1. September"], "", ""),
    ("w-uebergabe", [ON+"9"], "Neue Mitarbeitende kommen um 8 Uhr ins IT-Büro [1].", ["8 Uhr"], "", ""),
    ("w-laptop-jahre", [LA+"1"], "Laptops werden nach drei Jahren planmäßig ersetzt [1].", ["drei Jahren"], "", ""),
    ("w-leihgeraete", [LA+"3"], "Die IT hat sieben Leihgeräte [1].", ["sieben Leihgeräte"], "", ""),
    ("w-garantie", [ET+"4"], "Lenovo-Laptops haben zwei Jahre Vor-Ort-Garantie [1].", ["zwei Jahre"], "", ""),
    ("w-versand", [HO+"2"], "Versand nach Hause gibt es ab 30 km Entfernung [1].", ["30 km"], "", ""),
    ("w-sieve", [SV+"5"], "Ein Sieve-Skript darf höchstens 64 KB groß sein [1].", ["64 KB"], "", ""),
    ("w-managesieve", [SV+"2"], "Der ManageSieve-Dienst lauscht auf Port 2000 [1].", ["2000"], "", ""),
    ("w-imap-port", [MC+"1"], "IMAP läuft über Port 143 [1].", ["143"], "", ""),
    ("w-anhaenge", [MC+"3"], "Anhänge dürfen bis zu 50 MB groß sein [1].", ["50 MB"], "", ""),
    ("w-kurzwahl", [TE+"3"], "Die Sprachmailbox erreichen Sie unter der Kurzwahl 8800 [1].", ["8800"], "", ""),
    ("w-notfallcodes", [ZF+"3"], "Das Portal zeigt zwölf Notfallcodes an [1].", ["zwölf Notfallcodes"], "", ""),
    ("w-datenpanne", [DS+"2"], "Datenpannen sind innerhalb von 48 Stunden zu melden [1].", ["48 Stunden"], "", ""),
    ("w-dsgvo-art", [DS+"2"], "Die Meldefrist an die Behörde steht in Art. 34 DSGVO [1].", ["Art. 34"], "", ""),
    ("w-adresse", [IX+"1"], "Die Zentrale liegt in der Hafenrandstraße 19 in Hamburg [1].", ["19"], "", ""),
    ("w-fehlzitat", [RV+"4", RV+"7"], "Die Kündigungsfrist beträgt 3 Monate [1].", ["3 Monate"], "", "steht in [2], nicht in der zitierten [1]"),
    ("w-shared-cmd", [SF+"2"], "Rechte setzt man mit `sam shared/zoll group:GG-Zoll lrs` [1].", ["`sam shared/zoll group:GG-Zoll lrs`"], "", "falsche Rechte"),
    ("w-software", [SW+"2"], "Vom Ticket bis zur Installation vergehen in der Regel zehn Arbeitstage [1].", ["zehn Arbeitstage"], "", ""),
    ("w-raum", [ET+"1"], "Die Ersatzteile liegen in Raum U.14 [1].", ["U.14"], "", "falsche Raumnummer"),
    ("w-og", [DR+"4"], "Der Ersatztoner liegt im Kopierraum im 2. OG [1].", ["2. OG"], "", "falsches Stockwerk"),
    ("w-ubuntu", [VL+"0"], "Offiziell getestet ist Ubuntu 20.04 LTS [1].", ["20.04 LTS"], "", ""),
    ("w-2fa-code", [ZF+"0"], "Die App erzeugt alle 60 Sekunden einen neuen Code [1].", ["60 Sekunden"], "", ""),
    ("w-drucker-modell", [DR+"1"], "Im 1. OG steht ein Kyocera TASKalfa 3554ci [1].", ["3554ci"], "", "Modell eines anderen Druckers aus derselben Tabelle (bekannte Grenze)"),
    ("w-hauspost", [ET+"1"], "Die Hauspost nach Lüneburg fährt um 15:00 Uhr ab [1].", ["15:00 Uhr"], "", ""),
]

with open("eval/factcheck.jsonl", "w", encoding="utf-8") as out:
    for cid, refs, answer, wrong, question, note in CASES:
        item = {"id": cid, "sources": [chunk(r) for r in refs], "answer": answer, "wrong": wrong}
        if question:
            item["question"] = question
        if note:
            item["note"] = note
        out.write(json.dumps(item, ensure_ascii=False) + "\n")
print(len(CASES), "cases;", sum(1 for c in CASES if c[3]), "wrong")
